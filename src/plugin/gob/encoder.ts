// Gob encoder for one stream (one per direction per connection): it remembers which
// type definitions the peer has already received.
//
// Our choices, all accepted by Go's decoder: every type definition a value needs is
// sent as its own message before the value's message (Go's own encoder may instead
// put them inside the value's message, around interface values); ids are given out
// from 65 in the order types are first needed, parent before parts, as Go does (the
// captured plugin's ids start at 65 too); zero-valued struct fields are left out, and so is an empty map field
// (Go would send an empty non-nil map, but we cannot tell nil from empty, and a Go
// reader treats the absent map, nil, like an empty one).
import { ByteWriter } from './byte-writer.js';
import { GobError } from './gob-error.js';
import { derefType, typeString } from './go-types.js';
import type { GoInterfaceValue, GoStructType, GoType, GoValue } from './go-types.js';
import type { InterfaceRegistry } from './interface-registry.js';
import { resolveLimits } from './limits.js';
import type { GobLimits } from './limits.js';
import {
  FIRST_ENCODER_ID,
  MAX_TYPE_ID,
  builtinIdOf,
  describeWire,
  wireTypeSchema,
  wireTypeValue,
} from './wire-types.js';

/** A value with its type, for encodeAll. */
export interface GobItem {
  readonly type: GoType;
  readonly value: unknown;
}

export function gobItem<T extends GoType>(type: T, value: GoValue<T>): GobItem {
  return { type, value };
}

const utf8 = new TextEncoder();
const MAX_INT64 = (1n << 63n) - 1n;
const MIN_INT64 = -(1n << 63n);
const MAX_UINT64 = (1n << 64n) - 1n;

/** The types defined while encoding one batch; kept only if the whole batch succeeds. */
interface Batch {
  readonly newIds: Map<GoType, number>;
  nextId: number;
  /** Definition messages (without their length) for the value being encoded. */
  definitions: Uint8Array[];
}

export class GobEncoder {
  private readonly sent = new Map<GoType, number>();
  private nextId = FIRST_ENCODER_ID;
  private readonly limits: GobLimits;

  constructor(
    private readonly registry: InterfaceRegistry,
    limits: Partial<GobLimits> = {},
  ) {
    this.limits = resolveLimits(limits);
  }

  /** The bytes of one value, preceded by any definitions the peer has not seen. */
  encode<T extends GoType>(type: T, value: GoValue<T>): Uint8Array {
    return this.encodeAll([{ type, value }]);
  }

  /**
   * Several values as one byte string, all or nothing: if any value cannot be encoded,
   * nothing is returned and the stream's type table is unchanged (nothing was sent).
   */
  encodeAll(items: readonly GobItem[]): Uint8Array {
    const batch: Batch = { newIds: new Map(), nextId: this.nextId, definitions: [] };
    const out = new ByteWriter(256);
    for (const item of items) {
      batch.definitions = [];
      const body = new ByteWriter();
      body.writeInt(this.idOf(item.type, batch));
      const base = derefType(item.type);
      if (base.kind === 'struct') {
        this.writeStruct(body, base, item.value, batch, 0, typeString(base));
      } else {
        // A top-level non-struct value is framed like field 0 of a struct.
        body.writeUint(0);
        this.writeElem(body, item.type, item.value, batch, 0, typeString(item.type));
      }
      for (const def of batch.definitions) this.writeMessage(out, def);
      this.writeMessage(out, body.bytes());
    }
    for (const [type, id] of batch.newIds) this.sent.set(type, id);
    this.nextId = batch.nextId;
    return out.bytes().slice();
  }

  private writeMessage(out: ByteWriter, message: Uint8Array): void {
    if (message.length > this.limits.maxMessageBytes) {
      throw new GobError(
        `encoder: message of ${message.length} bytes exceeds the limit of ${this.limits.maxMessageBytes}`,
      );
    }
    out.writeCounted(message);
  }

  /** The id of a type, defining it (and, after it, its parts) on first use. */
  private idOf(type: GoType, batch: Batch): number {
    const t = derefType(type);
    const builtin = builtinIdOf(t);
    if (builtin !== undefined) return builtin;
    const known = this.sent.get(t) ?? batch.newIds.get(t);
    if (known !== undefined) return known;
    if (batch.nextId > MAX_TYPE_ID) throw new GobError('encoder: out of type ids');
    const id = batch.nextId++;
    batch.newIds.set(t, id);
    // Reserve the slot first so the parent's definition precedes its parts' (Go's order).
    const slot = batch.definitions.length;
    batch.definitions.push(new Uint8Array(0));
    const wire = describeWire(t, (part) => this.idOf(part, batch));
    const def = new ByteWriter();
    def.writeInt(-id);
    this.writeStruct(def, wireTypeSchema, wireTypeValue(id, wire), batch, 0, 'wireType');
    batch.definitions[slot] = def.bytes();
    return id;
  }

  private writeStruct(
    w: ByteWriter,
    type: GoStructType,
    value: unknown,
    batch: Batch,
    depth: number,
    path: string,
  ): void {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw mismatch(type, value, path);
    }
    const record = value as Record<string, unknown>;
    let last = -1;
    let index = 0;
    for (const [name, fieldType] of Object.entries(type.fields)) {
      const field = record[name];
      if (!isZero(fieldType, field)) {
        w.writeUint(index - last);
        this.writeElem(w, fieldType, field, batch, depth + 1, `${path}.${name}`);
        last = index;
      }
      index++;
    }
    w.writeUint(0);
  }

  // One case per Go kind; splitting it would only scatter the table.
  // eslint-disable-next-line complexity
  private writeElem(
    w: ByteWriter,
    type: GoType,
    value: unknown,
    batch: Batch,
    depth: number,
    path: string,
  ): void {
    if (depth > this.limits.maxDepth) {
      throw new GobError(`encoder: value nested deeper than ${this.limits.maxDepth} levels at ${path}`);
    }
    switch (type.kind) {
      case 'bool':
        if (typeof value !== 'boolean') throw mismatch(type, value, path);
        w.writeUint(value ? 1 : 0);
        return;
      case 'int':
        if (!Number.isSafeInteger(value)) throw mismatch(type, value, path);
        w.writeInt(value as number);
        return;
      case 'uint':
        if (!Number.isSafeInteger(value) || (value as number) < 0) throw mismatch(type, value, path);
        w.writeUint(value as number);
        return;
      case 'int64':
        if (typeof value !== 'bigint' || value < MIN_INT64 || value > MAX_INT64) {
          throw mismatch(type, value, path);
        }
        w.writeInt(value);
        return;
      case 'uint64':
        if (typeof value !== 'bigint' || value < 0n || value > MAX_UINT64) throw mismatch(type, value, path);
        w.writeUint(value);
        return;
      case 'float64':
        if (typeof value !== 'number') throw mismatch(type, value, path);
        w.writeFloat(value);
        return;
      case 'string':
        if (typeof value !== 'string') throw mismatch(type, value, path);
        w.writeCounted(utf8.encode(value));
        return;
      case 'bytes':
        if (!(value instanceof Uint8Array)) throw mismatch(type, value, path);
        w.writeCounted(value);
        return;
      case 'slice':
        if (!Array.isArray(value)) throw mismatch(type, value, path);
        w.writeUint(value.length);
        for (const elem of value) this.writeElem(w, type.elem, elem, batch, depth + 1, `${path}[]`);
        return;
      case 'map':
        if (!(value instanceof Map)) throw mismatch(type, value, path);
        w.writeUint(value.size);
        for (const [k, v] of value as Map<unknown, unknown>) {
          this.writeElem(w, type.key, k, batch, depth + 1, `${path}[key]`);
          this.writeElem(w, type.elem, v, batch, depth + 1, `${path}[value]`);
        }
        return;
      case 'struct':
        this.writeStruct(w, type, value, batch, depth, path);
        return;
      case 'ptr':
        if (value === null || value === undefined) {
          throw new GobError(`encoder: cannot encode nil pointer of type ${typeString(type)} at ${path}`);
        }
        this.writeElem(w, type.elem, value, batch, depth, path);
        return;
      case 'interface':
        this.writeInterface(w, value, batch, depth, path);
        return;
    }
  }

  /** name, type id, then the concrete value as its own counted top-level-style value. */
  private writeInterface(w: ByteWriter, value: unknown, batch: Batch, depth: number, path: string): void {
    if (value === null || value === undefined) {
      w.writeUint(0);
      return;
    }
    const iv = value as NonNullable<GoInterfaceValue>;
    if (typeof value !== 'object' || typeof iv.name !== 'string' || !('value' in iv)) {
      throw new GobError(`encoder: ${path} must be {name, value} or null for an interface`);
    }
    const concrete = this.registry.typeFor(iv.name);
    if (concrete === undefined) throw new GobError(`type not registered for interface: ${iv.name}`);
    if (concrete.kind === 'ptr' && (iv.value === null || iv.value === undefined)) {
      throw new GobError(`cannot encode nil pointer of type ${iv.name} inside interface`);
    }
    w.writeCounted(utf8.encode(iv.name));
    w.writeInt(this.idOf(concrete, batch));
    const inner = new ByteWriter();
    const base = derefType(concrete);
    const innerPath = `${path}(${iv.name})`;
    if (base.kind === 'struct') {
      this.writeStruct(inner, base, iv.value, batch, depth + 1, innerPath);
    } else {
      inner.writeUint(0);
      this.writeElem(inner, base, iv.value, batch, depth + 1, innerPath);
    }
    w.writeCounted(inner.bytes());
  }
}

/** Go leaves zero-valued struct fields out (structs themselves are always sent). */
function isZero(type: GoType, value: unknown): boolean {
  if (value === undefined) return true;
  switch (type.kind) {
    case 'ptr':
    case 'interface':
      return value === null;
    case 'bool':
      return value === false;
    case 'int':
    case 'uint':
    case 'float64':
      return value === 0;
    case 'int64':
    case 'uint64':
      return value === 0n;
    case 'string':
      return value === '';
    case 'bytes':
      return value instanceof Uint8Array && value.length === 0;
    case 'slice':
      return Array.isArray(value) && value.length === 0;
    case 'map':
      return value instanceof Map && value.size === 0;
    case 'struct':
      return false;
  }
}

function mismatch(type: GoType, value: unknown, path: string): GobError {
  let shown: string;
  if (typeof value === 'bigint') shown = `${value}n`;
  else if (typeof value === 'string')
    shown = JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  else if (value instanceof Uint8Array) shown = `Uint8Array(${value.length})`;
  else if (Array.isArray(value)) shown = `array(${value.length})`;
  else if (value instanceof Map) shown = `Map(${value.size})`;
  else if (value === null || typeof value !== 'object') shown = String(value);
  else shown = 'object';
  return new GobError(`encoder: cannot encode ${shown} as ${typeString(type)} at ${path}`);
}
