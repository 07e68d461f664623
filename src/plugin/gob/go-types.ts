// A small description of Go types, shared by the encoder and the decoder. A schema
// says what a Go program on the other end declares (a struct with named fields, a
// slice, a map, an interface ...); GoValue<T> is the TypeScript value that stands
// for a value of that type.

export type GoBasicKind = 'bool' | 'int' | 'uint' | 'int64' | 'uint64' | 'float64' | 'string' | 'bytes';

export interface GoBasicType<K extends GoBasicKind = GoBasicKind> {
  readonly kind: K;
}

export interface GoSliceType<E extends GoType = GoType> {
  readonly kind: 'slice';
  /** Go's type name; '' for an unnamed type such as []string. Informational on the wire. */
  readonly name: string;
  readonly elem: E;
}

export interface GoMapType<K extends GoType = GoType, V extends GoType = GoType> {
  readonly kind: 'map';
  readonly name: string;
  readonly key: K;
  readonly elem: V;
}

/** Field order is declaration order, which fixes the field numbers on the wire. */
export type GoFields = Readonly<Record<string, GoType>>;

export interface GoStructType<F extends GoFields = GoFields> {
  readonly kind: 'struct';
  readonly name: string;
  readonly fields: F;
}

/** A pointer travels as its element; in a struct field, nil is left out. */
export interface GoPtrType<E extends GoType = GoType> {
  readonly kind: 'ptr';
  readonly elem: E;
}

export interface GoInterfaceType {
  readonly kind: 'interface';
  /** Go's name for messages, e.g. "mcnflag.Flag". */
  readonly name: string;
}

export type GoType = GoBasicType | GoSliceType | GoMapType | GoStructType | GoPtrType | GoInterfaceType;

/** An interface value: the registered name of its concrete type and the value, or nil. */
export type GoInterfaceValue = { readonly name: string; readonly value: unknown } | null;

/**
 * The TypeScript value for a Go type. int and uint are JS numbers limited to the
 * safe-integer range; int64 and uint64 are bigints for the full 64 bits.
 */
export type GoValue<T extends GoType> = GoType extends T
  ? unknown // the type is not known statically
  : T extends GoBasicType<'bool'>
    ? boolean
    : T extends GoBasicType<'int' | 'uint' | 'float64'>
      ? number
      : T extends GoBasicType<'int64' | 'uint64'>
        ? bigint
        : T extends GoBasicType<'string'>
          ? string
          : T extends GoBasicType<'bytes'>
            ? Uint8Array
            : T extends GoSliceType<infer E>
              ? Array<GoValue<E>>
              : T extends GoMapType<infer K, infer V>
                ? Map<GoValue<K>, GoValue<V>>
                : T extends GoStructType<infer F>
                  ? { [N in keyof F]: GoValue<F[N]> }
                  : T extends GoPtrType<infer E>
                    ? GoValue<E> | null
                    : T extends GoInterfaceType
                      ? GoInterfaceValue
                      : never;

export const goBool: GoBasicType<'bool'> = { kind: 'bool' };
export const goInt: GoBasicType<'int'> = { kind: 'int' };
export const goUint: GoBasicType<'uint'> = { kind: 'uint' };
export const goInt64: GoBasicType<'int64'> = { kind: 'int64' };
export const goUint64: GoBasicType<'uint64'> = { kind: 'uint64' };
export const goFloat64: GoBasicType<'float64'> = { kind: 'float64' };
export const goString: GoBasicType<'string'> = { kind: 'string' };
/** []byte (Go's []uint8), which gob sends as a counted byte string. */
export const goBytes: GoBasicType<'bytes'> = { kind: 'bytes' };

export function goSlice<E extends GoType>(elem: E, name = ''): GoSliceType<E> {
  return { kind: 'slice', name, elem };
}

export function goMap<K extends GoType, V extends GoType>(key: K, elem: V, name = ''): GoMapType<K, V> {
  return { kind: 'map', name, key, elem };
}

export function goStruct<F extends GoFields>(name: string, fields: F): GoStructType<F> {
  return { kind: 'struct', name, fields };
}

export function goPtr<E extends GoType>(elem: E): GoPtrType<E> {
  return { kind: 'ptr', elem };
}

export function goInterface(name = 'interface {}'): GoInterfaceType {
  return { kind: 'interface', name };
}

/** []string, named as Go names it when it is a struct field or an interface's concrete type. */
export const goStringSlice: GoSliceType<GoBasicType<'string'>> = goSlice(goString, '[]string');

/** Go's struct{} (the argument and reply of every call that has none). */
export const goEmptyStruct: GoStructType<Record<string, never>> = goStruct('', {});

/** Follows pointers down to the type that travels on the wire. */
export function derefType(type: GoType): Exclude<GoType, GoPtrType> {
  let t = type;
  // Bounded: a schema is a finite tree of object literals, so the chain ends.
  while (t.kind === 'ptr') t = t.elem;
  return t;
}

/** Go-like text for a local type, for error messages. */
export function typeString(type: GoType): string {
  switch (type.kind) {
    case 'bool':
    case 'int':
    case 'uint':
    case 'int64':
    case 'uint64':
    case 'float64':
    case 'string':
      return type.kind;
    case 'bytes':
      return '[]uint8';
    case 'slice':
      return type.name || `[]${typeString(type.elem)}`;
    case 'map':
      return type.name || `map[${typeString(type.key)}]${typeString(type.elem)}`;
    case 'struct':
      return type.name || (Object.keys(type.fields).length === 0 ? 'struct {}' : 'struct {...}');
    case 'ptr':
      return `*${typeString(type.elem)}`;
    case 'interface':
      return type.name;
  }
}

/** The value a Go variable of this type holds before anything is assigned. */
export function zeroValue(type: GoType): unknown {
  switch (type.kind) {
    case 'bool':
      return false;
    case 'int':
    case 'uint':
    case 'float64':
      return 0;
    case 'int64':
    case 'uint64':
      return 0n;
    case 'string':
      return '';
    case 'bytes':
      return new Uint8Array(0);
    case 'slice':
      return [];
    case 'map':
      return new Map();
    case 'struct': {
      const out: Record<string, unknown> = {};
      for (const [name, fieldType] of Object.entries(type.fields)) out[name] = zeroValue(fieldType);
      return out;
    }
    case 'ptr':
    case 'interface':
      return null;
  }
}
