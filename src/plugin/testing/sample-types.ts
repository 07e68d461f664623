// The Go types of test/go-rpc-client/fixtures.go (Inner, Everything), for tests that
// exercise every kind the codec supports outside the protocol's own types.
import { driverRegistry } from '../driver-types.js';
import {
  goBool,
  goBytes,
  goFloat64,
  goInt,
  goInt64,
  goInterface,
  goMap,
  goPtr,
  goSlice,
  goString,
  goStringSlice,
  goStruct,
  goUint64,
} from '../gob/go-types.js';
import type { GoValue } from '../gob/go-types.js';
import type { InterfaceRegistry } from '../gob/interface-registry.js';

export const innerType = goStruct('Inner', { Name: goString, Count: goInt });

export const everythingType = goStruct('Everything', {
  Yes: goBool,
  Int: goInt,
  Neg: goInt64,
  Big: goUint64,
  Float: goFloat64,
  Text: goString,
  Raw: goBytes,
  List: goStringSlice,
  Counts: goMap(goString, goInt, 'map[string]int'),
  Inner: innerType,
  Ptr: goPtr(innerType),
  Any: goInterface(),
  Nothing: goInterface(),
  Skipped: goString,
  Inners: goSlice(innerType, '[]main.Inner'),
});

export type Everything = GoValue<typeof everythingType>;

/** fixtures.go's sampleEverything(). */
export function sampleEverything(): Everything {
  return {
    Yes: true,
    Int: -7,
    Neg: -(1n << 62n),
    Big: 2n ** 64n - 1n,
    Float: 1.5,
    Text: 'héllo',
    Raw: Uint8Array.of(0, 1, 2, 255),
    List: ['a', '', 'c'],
    Counts: new Map([['x', 300]]),
    Inner: { Name: 'in', Count: 2 },
    Ptr: { Name: 'ptr', Count: 0 },
    Any: { name: '*main.Inner', value: { Name: 'any', Count: -1 } },
    Nothing: null,
    Skipped: '',
    Inners: [
      { Name: 'a', Count: 0 },
      { Name: '', Count: 0 },
      { Name: '', Count: 3 },
    ],
  };
}

/** The protocol's registry plus fixtures.go's "*main.Inner". */
export function sampleRegistry(): InterfaceRegistry {
  return driverRegistry().register('*main.Inner', innerType);
}
