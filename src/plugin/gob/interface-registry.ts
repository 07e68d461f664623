// The names under which concrete types travel inside interface values, as Go's
// gob.Register / gob.RegisterName record them. Both ends must agree on every name:
// an unknown name is a decoding error, and rancher-machine only accepts the exact
// "*mcnflag.StringFlag" etc. it registered.
import { GobError } from './gob-error.js';
import {
  derefType,
  goBool,
  goBytes,
  goFloat64,
  goInt,
  goInt64,
  goString,
  goStringSlice,
  goUint,
  goUint64,
} from './go-types.js';
import type { GoType } from './go-types.js';

export class InterfaceRegistry {
  private readonly byName = new Map<string, GoType>();

  /** Registers a concrete type under a name; re-registering a name with another type is a bug. */
  register(name: string, type: GoType): this {
    if (name === '') throw new GobError('cannot register a concrete type under the empty name');
    const existing = this.byName.get(name);
    if (existing !== undefined && existing !== type) {
      throw new GobError(`registering duplicate types for ${JSON.stringify(name)}`);
    }
    if (derefType(type).kind === 'interface') {
      throw new GobError(`cannot register interface type ${JSON.stringify(name)} as a concrete type`);
    }
    this.byName.set(name, type);
    return this;
  }

  typeFor(name: string): GoType | undefined {
    return this.byName.get(name);
  }
}

/**
 * A registry holding the names gob's registerBasics gives the basic types that this
 * protocol puts in interfaces (RPCFlags.Values carries string, int, bool, []string).
 */
export function registryWithBasics(): InterfaceRegistry {
  return new InterfaceRegistry()
    .register('int', goInt)
    .register('uint', goUint)
    .register('int64', goInt64)
    .register('uint64', goUint64)
    .register('float64', goFloat64)
    .register('string', goString)
    .register('bool', goBool)
    .register('[]string', goStringSlice)
    .register('[]uint8', goBytes);
}
