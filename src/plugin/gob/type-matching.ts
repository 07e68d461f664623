// Which remote (wire) types a local type accepts, Go's compatibleType: ints from int,
// uints from uint, []byte only from []byte, slices and maps element by element,
// interfaces only from interface, structs from any struct (fields matched by name).
import { GobError } from './gob-error.js';
import { derefType, typeString } from './go-types.js';
import type { GoStructType, GoType } from './go-types.js';
import { TypeId, wireTypeString } from './wire-types.js';
import type { WireType } from './wire-types.js';

export type StructWire = Extract<WireType, { kind: 'struct' }>;

/** For each wire field number: the local field it fills, or undefined to drop it. */
export type StructPlan = ReadonlyArray<{ readonly name: string; readonly type: GoType } | undefined>;

/** Recursion follows the local type, a finite tree, so it ends even on cyclic wire types. */
export function isCompatible(local: GoType, id: number, types: ReadonlyMap<number, WireType>): boolean {
  const t = derefType(local);
  const wire = id > TypeId.Interface ? types.get(id) : undefined;
  switch (t.kind) {
    case 'bool':
      return id === TypeId.Bool;
    case 'int':
    case 'int64':
      return id === TypeId.Int;
    case 'uint':
    case 'uint64':
      return id === TypeId.Uint;
    case 'float64':
      return id === TypeId.Float;
    case 'string':
      return id === TypeId.String;
    case 'bytes':
      return id === TypeId.Bytes;
    case 'interface':
      return id === TypeId.Interface;
    case 'slice':
      return wire?.kind === 'slice' && isCompatible(t.elem, wire.elem, types);
    case 'map':
      return (
        wire?.kind === 'map' && isCompatible(t.key, wire.key, types) && isCompatible(t.elem, wire.elem, types)
      );
    case 'struct':
      return wire?.kind === 'struct';
  }
}

/** Throws Go's errors for a top-level or interface value of the wrong type. */
export function checkCompatible(
  target: Exclude<GoType, { kind: 'ptr' }>,
  id: number,
  types: ReadonlyMap<number, WireType>,
): void {
  if (isCompatible(target, id, types)) return;
  const remote = wireTypeString(id, types);
  if (target.kind === 'interface') {
    throw new GobError(
      `local interface type ${typeString(target)} can only be decoded from remote interface type; ` +
        `received concrete type ${remote}`,
    );
  }
  throw new GobError(`decoding into local type ${typeString(target)}, received remote type ${remote}`);
}

/**
 * Matches the fields of a wire struct to a local struct by name. As in Go, every field
 * present on both sides must be compatible, whether or not a value carries it.
 */
export function buildStructPlan(
  wire: StructWire,
  target: GoStructType,
  types: ReadonlyMap<number, WireType>,
): StructPlan {
  return wire.fields.map((f) => {
    if (!Object.hasOwn(target.fields, f.name)) return undefined;
    const type = target.fields[f.name];
    if (type === undefined) return undefined;
    if (!isCompatible(type, f.id, types)) {
      throw new GobError(
        `wrong type (${typeString(type)}) for received field ${wire.name || 'struct'}.${f.name}: ` +
          `remote type is ${wireTypeString(f.id, types)}`,
      );
    }
    return { name: f.name, type };
  });
}
