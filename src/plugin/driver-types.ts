// The Go types that RPCServerDriver's methods take and return (rancher/machine's
// libmachine/mcnflag and drivers/rpc), and the names gob registers them under.
// The names must be exact: rancher-machine only turns "*mcnflag.StringFlag" etc. into
// CLI flags, and its decoder refuses names it has not registered.
import { registryWithBasics } from './gob/interface-registry.js';
import type { InterfaceRegistry } from './gob/interface-registry.js';
import { goInt, goInterface, goMap, goSlice, goString, goStringSlice, goStruct } from './gob/go-types.js';
import type { GoValue } from './gob/go-types.js';

export const stringFlagType = goStruct('StringFlag', {
  Name: goString,
  Usage: goString,
  EnvVar: goString,
  Value: goString,
});
export const intFlagType = goStruct('IntFlag', {
  Name: goString,
  Usage: goString,
  EnvVar: goString,
  Value: goInt,
});
export const boolFlagType = goStruct('BoolFlag', { Name: goString, Usage: goString, EnvVar: goString });
export const stringSliceFlagType = goStruct('StringSliceFlag', {
  Name: goString,
  Usage: goString,
  EnvVar: goString,
  Value: goStringSlice,
});

/** mcnflag.Flag, the interface GetCreateFlags returns a slice of. */
export const mcnFlagInterface = goInterface('mcnflag.Flag');
export const mcnFlagSliceType = goSlice(mcnFlagInterface);

/** rpcdriver.RPCFlags, the concrete drivers.DriverOptions that SetConfigFromFlags receives. */
export const rpcFlagsType = goStruct('RPCFlags', {
  Values: goMap(goString, goInterface(), 'map[string]interface {}'),
});
export const driverOptionsInterface = goInterface('drivers.DriverOptions');

export type RpcFlagsValue = GoValue<typeof rpcFlagsType>;

export const GOB_NAMES = {
  rpcFlags: '*rpcdriver.RPCFlags',
  stringFlag: '*mcnflag.StringFlag',
  intFlag: '*mcnflag.IntFlag',
  boolFlag: '*mcnflag.BoolFlag',
  stringSliceFlag: '*mcnflag.StringSliceFlag',
} as const;

/** gob's basics plus every name rancher/machine's rpcdriver registers in its init(). */
export function driverRegistry(): InterfaceRegistry {
  return registryWithBasics()
    .register(GOB_NAMES.rpcFlags, rpcFlagsType)
    .register(GOB_NAMES.stringFlag, stringFlagType)
    .register(GOB_NAMES.intFlag, intFlagType)
    .register(GOB_NAMES.boolFlag, boolFlagType)
    .register(GOB_NAMES.stringSliceFlag, stringSliceFlagType);
}
