import { ByteQueue, takeMessage } from './byte-queue.js';
import { GobError } from './gob-error.js';
import { derefType, typeString, zeroValue } from './go-types.js';
import type { GoStructType, GoType, GoValue } from './go-types.js';
import type { InterfaceRegistry } from './interface-registry.js';
import { resolveLimits } from './limits.js';
import type { GobLimits } from './limits.js';
import { MessageReader } from './message-reader.js';
import { buildStructPlan, checkCompatible } from './type-matching.js';
import type { StructPlan, StructWire } from './type-matching.js';
import {
  FIRST_USER_ID,
  MAX_TYPE_ID,
  TypeId,
  bootstrapWireTypes,
  wireTypeFromValue,
  wireTypeSchema,
} from './wire-types.js';
import type { WireType, WireTypeValue } from './wire-types.js';

export type DecodeResult<T> = { readonly done: true; readonly value: T } | { readonly done: false };

/** Yields when it needs the next message; is resumed with it. */
type Steps<T> = Generator<void, T, Uint8Array>;

type Target = Exclude<GoType, { kind: 'ptr' }> | undefined;

interface ValueInProgress {
  readonly local: GoType | undefined;
  readonly steps: Steps<unknown>;
  started: boolean;
  bytes: number;
}

const NOT_YET: DecodeResult<never> = Object.freeze({ done: false });
const EMPTY = new Uint8Array(0);
const utf8 = new TextDecoder('utf-8', { ignoreBOM: true });

/**
 * Gob decoder for one stream, following Go's decoder step for step where it matters:
 *
 * - one current message; the next one is read only inside the type sequence, when
 *   the current one is used up (Go's decodeTypeSequence);
 * - inside an interface value, a definition may be followed by more bytes of the
 *   same message: one uint (a byte count) is then skipped; elsewhere it is an error;
 * - the byte count in front of an interface's concrete value is read and ignored;
 * - struct fields are matched by name; fields we do not know are read and dropped.
 *
 * Bytes arrive in chunks, and a value can span several messages (definitions sent
 * mid-value by Go's encoder), so decoding is written as generators that yield when
 * they need the next message. A value in progress is resumed when that message has
 * arrived, and no byte is ever decoded twice.
 */
export class GobDecoder {
  private readonly queue = new ByteQueue();
  private readonly reader = new MessageReader();
  private readonly types = bootstrapWireTypes();
  private readonly plans = new Map<number, Map<GoStructType, StructPlan>>();
  private readonly limits: GobLimits;
  private definedTypes = 0;
  private definitionBytes = 0;
  private inProgress: ValueInProgress | undefined;
  private broken: GobError | undefined;

  constructor(
    private readonly registry: InterfaceRegistry,
    limits: Partial<GobLimits> = {},
  ) {
    this.limits = resolveLimits(limits);
  }

  push(chunk: Uint8Array): void {
    this.queue.push(chunk);
  }

  /** Bytes received and not yet decoded. */
  get buffered(): number {
    return this.queue.length;
  }

  /** True when no value is half-decoded and no byte is waiting. */
  get idle(): boolean {
    return this.inProgress === undefined && this.queue.length === 0;
  }

  /**
   * Decodes the next value into `local`, or reports that more bytes are needed (call
   * again with the same type after push). Throws GobError; after a fatal one the
   * stream is unusable and every later call throws it again.
   */
  read<T extends GoType>(local: T): DecodeResult<GoValue<T>> {
    return this.next(local) as DecodeResult<GoValue<T>>;
  }

  /** Reads the next value and drops it (Go's Decode(nil)). */
  skip(): DecodeResult<undefined> {
    return this.next(undefined) as DecodeResult<undefined>;
  }

  private next(local: GoType | undefined): DecodeResult<unknown> {
    if (this.broken) throw this.broken;
    if (this.inProgress === undefined) {
      if (this.queue.length === 0) return NOT_YET;
      this.inProgress = { local, steps: this.decodeTop(local), started: false, bytes: 0 };
    } else if (this.inProgress.local !== local) {
      throw new Error('GobDecoder: a different value is already being decoded');
    }
    const value = this.inProgress;
    try {
      for (;;) {
        let input: Uint8Array = EMPTY;
        if (value.started) {
          const message = takeMessage(this.queue, this.limits.maxMessageBytes);
          if (message === undefined) return NOT_YET;
          value.bytes += message.length;
          if (value.bytes > this.limits.maxMessageBytes) {
            throw new GobError(`value spans more than ${this.limits.maxMessageBytes} bytes of messages`);
          }
          input = message;
        }
        value.started = true;
        const step = value.steps.next(input);
        if (step.done) {
          this.inProgress = undefined;
          return { done: true, value: step.value };
        }
      }
    } catch (e) {
      this.inProgress = undefined;
      const error =
        e instanceof GobError
          ? e
          : new GobError(`internal decoder error: ${e instanceof Error ? e.message : String(e)}`, {
              fatal: true,
            });
      if (error.fatal) this.broken = error;
      throw error;
    }
  }

  private *decodeTop(local: GoType | undefined): Steps<unknown> {
    // Whatever is left of the previous value's message is dropped, as in Go.
    this.reader.clear();
    const id = yield* this.typeSequence(false);
    return yield* this.decodeValue(id, local === undefined ? undefined : derefType(local), 0);
  }

  /** Definitions until a type id; the only place where a new message is read. */
  private *typeSequence(inInterface: boolean): Steps<number> {
    for (;;) {
      if (this.reader.remaining() === 0) this.reader.load(yield);
      const id = this.reader.readInt('type id');
      if (id >= 0) return id;
      yield* this.defineType(-id);
      if (this.reader.remaining() > 0) {
        if (!inInterface) throw new GobError('extra data in buffer after a type definition');
        this.reader.readUintBig(); // a byte count, of no use here
      }
    }
  }

  private *defineType(id: number): Steps<void> {
    if (id < FIRST_USER_ID || id > MAX_TYPE_ID || this.types.has(id)) {
      throw new GobError(`duplicate type received (type id ${id})`);
    }
    if (this.definedTypes >= this.limits.maxTypeDefinitions) {
      throw new GobError(`more than ${this.limits.maxTypeDefinitions} type definitions in one stream`);
    }
    const before = this.reader.remaining();
    const value = (yield* this.decodeValue(TypeId.WireType, wireTypeSchema, 0)) as WireTypeValue;
    this.definitionBytes += Math.max(0, before - this.reader.remaining());
    if (this.definitionBytes > this.limits.maxDefinitionBytes) {
      throw new GobError(
        `type definitions take more than ${this.limits.maxDefinitionBytes} bytes in one stream`,
      );
    }
    this.types.set(id, wireTypeFromValue(id, value));
    this.definedTypes++;
  }

  /** A value after its type id: a struct, or a singleton framed as field 0. */
  private *decodeValue(id: number, target: Target, depth: number): Steps<unknown> {
    const wire = this.wireType(id);
    if (wire?.kind === 'struct' && (target === undefined || target.kind === 'struct')) {
      if (target !== undefined) {
        const plan = this.structPlan(id, wire, target);
        if (
          plan.every((f) => f === undefined) &&
          Object.keys(target.fields).length > 0 &&
          wire.fields.length > 0
        ) {
          throw new GobError(`type mismatch: no fields matched compiling decoder for ${typeString(target)}`);
        }
      }
      return yield* this.decodeStruct(id, wire, target, depth);
    }
    if (target !== undefined) checkCompatible(target, id, this.types);
    if (this.reader.readUint('field delta') !== 0) {
      throw new GobError('decode: corrupted data: non-zero delta for singleton');
    }
    return yield* this.decodeElem(id, target, depth);
  }

  private *decodeStruct(
    id: number,
    wire: StructWire,
    target: GoStructType | undefined,
    depth: number,
  ): Steps<unknown> {
    const plan = target === undefined ? undefined : this.structPlan(id, wire, target);
    const out = target === undefined ? undefined : (zeroValue(target) as Record<string, unknown>);
    let fieldnum = -1;
    // As in Go, the end of the message also ends a struct.
    while (this.reader.remaining() > 0) {
      const delta = this.reader.readUint('field number delta');
      if (delta === 0) break;
      if (delta > wire.fields.length - 1 - fieldnum) {
        throw new GobError(`field number out of range in ${wire.name || 'struct'}`);
      }
      fieldnum += delta;
      const wireField = wire.fields[fieldnum];
      if (wireField === undefined) throw new GobError('field number out of range');
      const local = plan?.[fieldnum];
      const target = local === undefined ? undefined : derefType(local.type);
      const v = yield* this.decodeElem(wireField.id, target, depth + 1);
      if (out !== undefined && local !== undefined) out[local.name] = v;
    }
    return out;
  }

  // One case per wire kind; splitting it would only scatter the table.
  // eslint-disable-next-line complexity
  private *decodeElem(id: number, target: Target, depth: number): Steps<unknown> {
    if (depth > this.limits.maxDepth) {
      throw new GobError(`value nested deeper than ${this.limits.maxDepth} levels`);
    }
    if (id >= TypeId.Bool && id <= TypeId.Complex) return this.decodeBasic(id, target);
    if (id === TypeId.Interface) return yield* this.decodeInterface(target !== undefined, depth);
    const wire = this.wireType(id);
    if (wire === undefined) throw new GobError(`unknown type id ${id}`);
    switch (wire.kind) {
      case 'slice':
      case 'array': {
        const count = this.reader.readUint('slice length');
        if (wire.kind === 'array' && count !== wire.len) throw new GobError('length mismatch in array');
        const elemTarget = target?.kind === 'slice' ? derefType(target.elem) : undefined;
        const out: unknown[] | undefined = target === undefined ? undefined : [];
        for (let i = 0; i < count; i++) {
          // Every element takes at least one byte: a huge count cannot spin on nothing.
          if (this.reader.remaining() === 0) {
            throw new GobError(`decoding array or slice: length exceeds input size (${count} elements)`);
          }
          const v =
            wire.elem <= TypeId.Complex
              ? this.decodeBasic(wire.elem, elemTarget)
              : yield* this.decodeElem(wire.elem, elemTarget, depth + 1);
          out?.push(v);
        }
        return out;
      }
      case 'map': {
        const count = this.reader.readUint('map length');
        const keyTarget = target?.kind === 'map' ? derefType(target.key) : undefined;
        const elemTarget = target?.kind === 'map' ? derefType(target.elem) : undefined;
        const out = target === undefined ? undefined : new Map<unknown, unknown>();
        for (let i = 0; i < count; i++) {
          if (this.reader.remaining() === 0) {
            throw new GobError(`decoding map: length exceeds input size (${count} entries)`);
          }
          const k = yield* this.decodeElem(wire.key, keyTarget, depth + 1);
          const v = yield* this.decodeElem(wire.elem, elemTarget, depth + 1);
          out?.set(k, v);
        }
        return out;
      }
      case 'struct':
        return yield* this.decodeStruct(id, wire, target?.kind === 'struct' ? target : undefined, depth);
      case 'gobEncoder':
      case 'binaryMarshaler':
      case 'textMarshaler':
        // Only ever dropped: no local type of ours has such a method.
        this.reader.skip(this.reader.readLength('encoded value length'));
        return undefined;
    }
  }

  private decodeBasic(id: number, target: Target): unknown {
    const r = this.reader;
    if (target === undefined && id <= TypeId.Float) {
      r.skipUint();
      return undefined;
    }
    switch (id) {
      case TypeId.Bool:
        return r.readUintBig() !== 0n;
      case TypeId.Int:
        return target?.kind === 'int64' ? r.readIntBig() : r.readInt('int value (a JavaScript number)');
      case TypeId.Uint:
        return target?.kind === 'uint64' ? r.readUintBig() : r.readUint('uint value (a JavaScript number)');
      case TypeId.Float:
        return r.readFloat();
      case TypeId.Bytes: {
        const view = r.readView(r.readLength('byte slice length'));
        // A copy, as a plain Uint8Array: the view may be a Buffer over a whole socket chunk.
        return target === undefined ? undefined : new Uint8Array(view);
      }
      case TypeId.String: {
        const view = r.readView(r.readLength('string length'));
        return target === undefined ? undefined : utf8.decode(view);
      }
      default:
        // complex: two floats, only ever dropped.
        r.readUintBig();
        r.readUintBig();
        return undefined;
    }
  }

  private *decodeInterface(decoding: boolean, depth: number): Steps<unknown> {
    const nameLength = this.reader.readLength('interface type name length');
    if (nameLength === 0) return null;
    if (nameLength > this.limits.maxTypeNameBytes) {
      throw new GobError(`interface type name too long (${nameLength} bytes)`);
    }
    const name = utf8.decode(this.reader.readView(nameLength));
    if (!decoding) {
      // Go's ignoreInterface: the type sequence, then skip the value by its byte count.
      yield* this.typeSequence(true);
      this.reader.skip(this.reader.readLength('interface value length'));
      return undefined;
    }
    const concrete = this.registry.typeFor(name);
    if (concrete === undefined)
      throw new GobError(`name not registered for interface: ${JSON.stringify(name)}`);
    const id = yield* this.typeSequence(true);
    this.reader.readUintBig(); // the value's byte count: read and ignored, as Go does
    const value = yield* this.decodeValue(id, derefType(concrete), depth + 1);
    return { name, value };
  }

  private wireType(id: number): WireType | undefined {
    if (id >= TypeId.Bool && id <= TypeId.Interface) return undefined;
    const wire = this.types.get(id);
    if (wire === undefined) throw new GobError(`unknown type id ${id}`);
    return wire;
  }

  private structPlan(id: number, wire: StructWire, target: GoStructType): StructPlan {
    let byTarget = this.plans.get(id);
    if (byTarget === undefined) this.plans.set(id, (byTarget = new Map<GoStructType, StructPlan>()));
    let plan = byTarget.get(target);
    if (plan === undefined) {
      plan = buildStructPlan(wire, target, this.types);
      byTarget.set(target, plan);
    }
    return plan;
  }
}
