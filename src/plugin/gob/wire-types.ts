// Type ids and type definitions as they travel in a gob stream.
//
// A definition is sent as int(-id) followed by a value of Go's wireType struct.
// wireType and its parts (CommonType, sliceType, structType ...) are themselves
// described with our schema, so definitions are read and written by the same code
// as every other value. Their ids (16..24) are fixed by Go and never sent.
import { GobError } from './gob-error.js';
import { derefType, goInt, goPtr, goSlice, goString, goStruct, typeString } from './go-types.js';
import type { GoType, GoValue } from './go-types.js';

/** Ids every gob stream knows without a definition. */
export const TypeId = {
  Bool: 1,
  Int: 2,
  Uint: 3,
  Float: 4,
  Bytes: 5,
  String: 6,
  Complex: 7,
  Interface: 8,
  WireType: 16,
  ArrayType: 17,
  CommonType: 18,
  SliceType: 19,
  StructType: 20,
  FieldType: 21,
  FieldTypeSlice: 22,
  MapType: 23,
  /** Go assigns this one at start-up; it is only used here to read wireType's last three fields. */
  GobEncoderType: 24,
} as const;

/** Go refuses definitions of ids below this (they are its own). */
export const FIRST_USER_ID = 64;
/** Our encoder's first id, the one Go gives its first type (docs/upstream/plugin-protocol.md#captured-bytes). */
export const FIRST_ENCODER_ID = 65;
/** Go's typeId is an int32. */
export const MAX_TYPE_ID = 2 ** 31 - 1;

export type WireType =
  | { readonly kind: 'array'; readonly name: string; readonly elem: number; readonly len: number }
  | { readonly kind: 'slice'; readonly name: string; readonly elem: number }
  | {
      readonly kind: 'struct';
      readonly name: string;
      readonly fields: ReadonlyArray<{ readonly name: string; readonly id: number }>;
    }
  | { readonly kind: 'map'; readonly name: string; readonly key: number; readonly elem: number }
  | { readonly kind: 'gobEncoder' | 'binaryMarshaler' | 'textMarshaler'; readonly name: string };

const commonType = goStruct('CommonType', { Name: goString, Id: goInt });
const arrayType = goStruct('arrayType', { CommonType: commonType, Elem: goInt, Len: goInt });
const sliceType = goStruct('sliceType', { CommonType: commonType, Elem: goInt });
const fieldType = goStruct('fieldType', { Name: goString, Id: goInt });
const fieldTypeSlice = goSlice(goPtr(fieldType));
const structType = goStruct('structType', { CommonType: commonType, Field: fieldTypeSlice });
const mapType = goStruct('mapType', { CommonType: commonType, Key: goInt, Elem: goInt });
const gobEncoderType = goStruct('gobEncoderType', { CommonType: commonType });

/** Go's wireType: exactly one field is set in a valid definition. */
export const wireTypeSchema = goStruct('wireType', {
  ArrayT: goPtr(arrayType),
  SliceT: goPtr(sliceType),
  StructT: goPtr(structType),
  MapT: goPtr(mapType),
  GobEncoderT: goPtr(gobEncoderType),
  BinaryMarshalerT: goPtr(gobEncoderType),
  TextMarshalerT: goPtr(gobEncoderType),
});

export type WireTypeValue = GoValue<typeof wireTypeSchema>;

const BOOTSTRAP_IDS = new Map<GoType, number>([
  [wireTypeSchema, TypeId.WireType],
  [arrayType, TypeId.ArrayType],
  [commonType, TypeId.CommonType],
  [sliceType, TypeId.SliceType],
  [structType, TypeId.StructType],
  [fieldType, TypeId.FieldType],
  [fieldTypeSlice, TypeId.FieldTypeSlice],
  [mapType, TypeId.MapType],
  [gobEncoderType, TypeId.GobEncoderType],
]);

/** The id of a basic type, or undefined for types that need a definition. */
export function builtinIdOf(type: GoType): number | undefined {
  const t = derefType(type);
  switch (t.kind) {
    case 'bool':
      return TypeId.Bool;
    case 'int':
    case 'int64':
      return TypeId.Int;
    case 'uint':
    case 'uint64':
      return TypeId.Uint;
    case 'float64':
      return TypeId.Float;
    case 'bytes':
      return TypeId.Bytes;
    case 'string':
      return TypeId.String;
    case 'interface':
      return TypeId.Interface;
    case 'slice':
    case 'map':
    case 'struct':
      return BOOTSTRAP_IDS.get(t);
  }
}

/** The definition of a composite local type, given the ids of the types it refers to. */
export function describeWire(type: GoType, idOf: (t: GoType) => number): WireType {
  const t = derefType(type);
  switch (t.kind) {
    case 'slice':
      return { kind: 'slice', name: t.name, elem: idOf(t.elem) };
    case 'map':
      return { kind: 'map', name: t.name, key: idOf(t.key), elem: idOf(t.elem) };
    case 'struct':
      return {
        kind: 'struct',
        name: t.name,
        fields: Object.entries(t.fields).map(([name, fieldType]) => ({ name, id: idOf(fieldType) })),
      };
    case 'bool':
    case 'int':
    case 'uint':
    case 'int64':
    case 'uint64':
    case 'float64':
    case 'string':
    case 'bytes':
    case 'interface':
      throw new GobError(`type ${typeString(t)} needs no definition`);
  }
}

/** The wireType value that defines `wire` under `id`. */
export function wireTypeValue(id: number, wire: WireType): WireTypeValue {
  const common = { Name: wire.name, Id: id };
  const none: WireTypeValue = {
    ArrayT: null,
    SliceT: null,
    StructT: null,
    MapT: null,
    GobEncoderT: null,
    BinaryMarshalerT: null,
    TextMarshalerT: null,
  };
  switch (wire.kind) {
    case 'array':
      return { ...none, ArrayT: { CommonType: common, Elem: wire.elem, Len: wire.len } };
    case 'slice':
      return { ...none, SliceT: { CommonType: common, Elem: wire.elem } };
    case 'struct':
      return {
        ...none,
        StructT: { CommonType: common, Field: wire.fields.map((f) => ({ Name: f.name, Id: f.id })) },
      };
    case 'map':
      return { ...none, MapT: { CommonType: common, Key: wire.key, Elem: wire.elem } };
    case 'gobEncoder':
      return { ...none, GobEncoderT: { CommonType: common } };
    case 'binaryMarshaler':
      return { ...none, BinaryMarshalerT: { CommonType: common } };
    case 'textMarshaler':
      return { ...none, TextMarshalerT: { CommonType: common } };
  }
}

/** Checks a received definition and turns it into a WireType. */
export function wireTypeFromValue(id: number, value: WireTypeValue): WireType {
  const set = Object.entries(value).filter(([, v]) => v !== null);
  if (set.length !== 1) {
    throw new GobError(`definition of type id ${id} sets ${set.length} kinds (want exactly 1)`);
  }
  const checkId = (ref: number, what: string): number => {
    if (!Number.isInteger(ref) || ref <= 0 || ref > MAX_TYPE_ID) {
      throw new GobError(`definition of type id ${id}: invalid ${what} type id ${ref}`);
    }
    return ref;
  };
  if (value.ArrayT) {
    const { CommonType: c, Elem, Len } = value.ArrayT;
    if (Len < 0) throw new GobError(`definition of type id ${id}: negative array length ${Len}`);
    return { kind: 'array', name: c.Name, elem: checkId(Elem, 'element'), len: Len };
  }
  if (value.SliceT) {
    return { kind: 'slice', name: value.SliceT.CommonType.Name, elem: checkId(value.SliceT.Elem, 'element') };
  }
  if (value.StructT) {
    const { CommonType: c, Field } = value.StructT;
    const fields = Field.map((f, i) => {
      if (f === null || f.Name === '') {
        throw new GobError(`empty name for remote field ${i} of type ${c.Name || `id ${id}`}`);
      }
      return { name: f.Name, id: checkId(f.Id, `field ${f.Name}`) };
    });
    return { kind: 'struct', name: c.Name, fields };
  }
  if (value.MapT) {
    const { CommonType: c, Key, Elem } = value.MapT;
    return { kind: 'map', name: c.Name, key: checkId(Key, 'key'), elem: checkId(Elem, 'element') };
  }
  if (value.GobEncoderT) return { kind: 'gobEncoder', name: value.GobEncoderT.CommonType.Name };
  if (value.BinaryMarshalerT)
    return { kind: 'binaryMarshaler', name: value.BinaryMarshalerT.CommonType.Name };
  return { kind: 'textMarshaler', name: value.TextMarshalerT?.CommonType.Name ?? '' };
}

/** The definitions of wireType and its parts, which a decoder needs to read any definition. */
export function bootstrapWireTypes(): Map<number, WireType> {
  const idOf = (t: GoType): number => {
    const id = builtinIdOf(t);
    if (id === undefined) throw new GobError(`bootstrap type ${typeString(t)} has no id`);
    return id;
  };
  const out = new Map<number, WireType>();
  for (const [schema, id] of BOOTSTRAP_IDS) out.set(id, describeWire(schema, idOf));
  return out;
}

const BASIC_NAMES: Readonly<Record<number, string>> = {
  [TypeId.Bool]: 'bool',
  [TypeId.Int]: 'int',
  [TypeId.Uint]: 'uint',
  [TypeId.Float]: 'float64',
  [TypeId.Bytes]: '[]uint8',
  [TypeId.String]: 'string',
  [TypeId.Complex]: 'complex128',
  [TypeId.Interface]: 'interface',
};

/** Text for a remote type id, for error messages. */
export function wireTypeString(id: number, types: ReadonlyMap<number, WireType>): string {
  const basic = BASIC_NAMES[id];
  if (basic !== undefined) return basic;
  const wire = types.get(id);
  if (wire === undefined) return `unknown type id ${id}`;
  if (wire.name) return wire.name;
  switch (wire.kind) {
    case 'slice':
      return `[]${BASIC_NAMES[wire.elem] ?? `type id ${wire.elem}`}`;
    case 'array':
      return `[${wire.len}]${BASIC_NAMES[wire.elem] ?? `type id ${wire.elem}`}`;
    case 'map':
      return `map[${BASIC_NAMES[wire.key] ?? `type id ${wire.key}`}]${BASIC_NAMES[wire.elem] ?? `type id ${wire.elem}`}`;
    case 'struct':
      return wire.fields.length === 0 ? 'struct {}' : `struct (type id ${id})`;
    case 'gobEncoder':
    case 'binaryMarshaler':
    case 'textMarshaler':
      return `${wire.kind} (type id ${id})`;
  }
}
