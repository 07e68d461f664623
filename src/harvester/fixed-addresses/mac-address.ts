// What a MAC read from someone else's object (an address claim) must be before the driver
// pins it on a VM's interface and names it in the guest's network data: one interface's
// address, never a group's. The forms are Go's net.ParseMAC's for 6 bytes, which KubeVirt
// accepts; locally administered and universal addresses are both fine (the driver makes
// locally administered ones, an operator's --harvester-network-info may give either).

const COLONS_OR_DASHES = /^[0-9A-Fa-f]{2}([:-])(?:[0-9A-Fa-f]{2}\1){4}[0-9A-Fa-f]{2}$/;
const DOTTED = /^[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4}$/;

/** The 6 bytes of a MAC in one of Go's 6-byte forms, or undefined. */
export function parseMac(text: string): number[] | undefined {
  if (!COLONS_OR_DASHES.test(text) && !DOTTED.test(text)) return undefined;
  const hex = text.replace(/[:.-]/g, '');
  return Array.from({ length: 6 }, (_, i) => parseInt(hex.slice(i * 2, i * 2 + 2), 16));
}

/** Why `mac` is not one unicast interface address (a phrase after the value), or undefined. */
export function unicastMacProblem(mac: string): string | undefined {
  const bytes = parseMac(mac);
  if (!bytes) return 'is not a MAC address of 6 octets (like 02:00:00:00:00:01)';
  if (bytes.every((b) => b === 0)) return 'is all zeros, which no interface has';
  if (bytes.every((b) => b === 0xff)) return 'is the broadcast address';
  if (((bytes[0] ?? 0) & 0x01) === 1)
    return "is a multicast address (the first octet's lowest bit is set); an interface needs a unicast one";
  return undefined;
}
