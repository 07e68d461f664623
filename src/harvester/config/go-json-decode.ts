// How Go's encoding/json fills a struct from an object, where it differs from reading a
// JavaScript object's keys: a key names a field exactly or, failing that, case-insensitively
// ("ImageName" and "imagename" fill imageName), unknown keys are ignored, and when several
// keys name one field the last one wins. The Go driver reads --harvester-disk-info,
// --harvester-network-info, --harvester-vgpu-info and --harvester-vm-affinity this way, so a
// value it accepts is read the same here.

/**
 * The value Go's json.Unmarshal would put in field `name` of a struct, or undefined if no key
 * names it. Our structs have no two fields that differ only in case, so every key equal to the
 * name when both are lower-cased fills it, and the last such key wins.
 */
export function goField(obj: Readonly<Record<string, unknown>>, name: string): unknown {
  const lower = name.toLowerCase();
  let value: unknown = undefined;
  for (const [k, v] of Object.entries(obj)) if (k.toLowerCase() === lower) value = v;
  return value;
}

export const isJsonObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);
