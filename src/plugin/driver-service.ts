// rancher/machine's RPCServerDriver (libmachine/drivers/rpc/server_driver.go) over a
// MachineDriver: every method rancher-machine calls, with the Go types of its argument
// and reply. There is deliberately no Upgrade: a Go plugin has none either, so the
// call gets net/rpc's "can't find method" like it does there.
import type { FlagValue, MachineDriver, McnFlag } from '../driver/machine-driver.js';
import { silentLogger } from '../log/logger.js';
import type { Logger } from '../log/logger.js';
import {
  GOB_NAMES,
  driverOptionsInterface,
  mcnFlagSliceType,
  stringFlagType,
  intFlagType,
  boolFlagType,
  stringSliceFlagType,
} from './driver-types.js';
import type { RpcFlagsValue } from './driver-types.js';
import { goBytes, goInt, goString } from './gob/go-types.js';
import type { GoInterfaceValue, GoValue } from './gob/go-types.js';
import { EMPTY_STRUCT, emptyStructType } from './net-rpc-types.js';
import { describeThrown, rpcMethod } from './rpc-service.js';
import type { RpcMethod, RpcService, RpcServices } from './rpc-service.js';

/** rancher-machine calls the V1 name and falls back to the V0 one; both serve the same object. */
export const DRIVER_SERVICE_NAMES = ['RPCServerDriver', 'RpcServerDriver'] as const;
/** libmachine/version.APIVersion: rancher-machine refuses any other. */
export const API_VERSION = 1;

export interface DriverServiceOptions {
  /** Runs once Close has been answered; the plugin exits there. */
  readonly onClose?: () => void;
  readonly logger?: Logger;
}

/** The service under both of its names. */
export function driverServices(driver: MachineDriver, options: DriverServiceOptions = {}): RpcServices {
  const service = driverService(driver, options);
  return new Map(DRIVER_SERVICE_NAMES.map((name) => [name, service]));
}

export function driverService(driver: MachineDriver, options: DriverServiceOptions = {}): RpcService {
  const log = options.logger ?? silentLogger;
  const none = emptyStructType;
  const action = (name: string, run: () => Promise<void>): RpcMethod =>
    rpcMethod(none, none, async () => {
      await guarded(name, log, run);
      return EMPTY_STRUCT;
    });
  const text = (name: string, get: () => string | Promise<string>): RpcMethod =>
    rpcMethod(none, goString, () => guarded(name, log, get));

  return new Map<string, RpcMethod>([
    ['GetVersion', rpcMethod(none, goInt, () => API_VERSION)],
    // Its arrival is what matters: every request feeds the plugin's watchdog.
    ['Heartbeat', rpcMethod(none, none, () => EMPTY_STRUCT)],
    ['Close', rpcMethod(none, none, () => EMPTY_STRUCT, options.onClose)],
    ['PreCreateCheck', action('PreCreateCheck', () => driver.preCreateCheck())],
    ['Create', action('Create', () => driver.create())],
    ['Remove', action('Remove', () => driver.remove())],
    ['Start', action('Start', () => driver.start())],
    ['Stop', action('Stop', () => driver.stop())],
    ['Restart', action('Restart', () => driver.restart())],
    ['Kill', action('Kill', () => driver.kill())],
    [
      'GetCreateFlags',
      rpcMethod(none, mcnFlagSliceType, () =>
        guarded('GetCreateFlags', log, () => driver.getCreateFlags().map(toGoFlag)),
      ),
    ],
    [
      'SetConfigRaw',
      rpcMethod(goBytes, none, async (json) => {
        await guarded('SetConfigRaw', log, () => driver.setConfigRaw(json));
        return EMPTY_STRUCT;
      }),
    ],
    [
      'GetConfigRaw',
      rpcMethod(none, goBytes, () => guarded('GetConfigRaw', log, () => driver.getConfigRaw())),
    ],
    [
      'SetConfigFromFlags',
      rpcMethod(driverOptionsInterface, none, async (options) => {
        const values = flagValuesFrom(options, log);
        await guarded('SetConfigFromFlags', log, () => driver.setConfigFromFlags(values));
        return EMPTY_STRUCT;
      }),
    ],
    ['DriverName', text('DriverName', () => driver.driverName())],
    ['GetMachineName', text('GetMachineName', () => driver.getMachineName())],
    ['GetSSHKeyPath', text('GetSSHKeyPath', () => driver.getSSHKeyPath())],
    ['GetSSHUsername', text('GetSSHUsername', () => driver.getSSHUsername())],
    ['GetSSHHostname', text('GetSSHHostname', () => driver.getSSHHostname())],
    ['GetURL', text('GetURL', () => driver.getURL())],
    ['GetIP', text('GetIP', () => driver.getIP())],
    ['GetIPv6', text('GetIPv6', () => driver.getIPv6())],
    ['GetSSHPort', rpcMethod(none, goInt, () => guarded('GetSSHPort', log, () => driver.getSSHPort()))],
    ['GetState', rpcMethod(none, goInt, () => guarded('GetState', log, () => driver.getState()))],
  ]);
}

/**
 * Runs a driver method. An Error is the method's error, as a Go error would be. A
 * crash (TypeError, RangeError ...) or a thrown non-Error is reported the way
 * rancher/machine reports a panic in Create: "Panic in the driver: <what>\n<stack>".
 * Go recovers only in Create (a panic elsewhere kills a Go plugin); we never let a
 * driver bug take the plugin down, so every method reports it that way.
 */
async function guarded<T>(method: string, log: Logger, run: () => T | Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (e) {
    if (e instanceof Error && !isCrash(e)) throw e;
    const panic = panicError(e);
    // The first line for the user; the stack travels in the error (and the debug log).
    log.error(`${method}: ${panic.message.split('\n', 1)[0] ?? ''}`);
    throw panic;
  }
}

/** Errors that mean a bug in the driver rather than a failed operation. */
function isCrash(e: Error): boolean {
  // SyntaxError is left out: at run time it comes from JSON.parse of bad input.
  return (
    e instanceof TypeError || e instanceof RangeError || e instanceof ReferenceError || e instanceof EvalError
  );
}

export function panicError(thrown: unknown): Error {
  if (thrown instanceof Error) {
    const frames = (thrown.stack ?? '')
      .split('\n')
      .filter((line) => line.startsWith('    at '))
      .join('\n');
    return new Error(`Panic in the driver: ${thrown.name}: ${thrown.message}\n${frames}`);
  }
  return new Error(`Panic in the driver: non-error value thrown: ${describeThrown(thrown)}\n`);
}

/** McnFlag to the *mcnflag.* value rancher-machine turns into a CLI flag. */
export function toGoFlag(flag: McnFlag): NonNullable<GoInterfaceValue> {
  const common = { Name: flag.name, Usage: flag.usage, EnvVar: flag.envVar };
  switch (flag.kind) {
    case 'string':
      return goFlag(GOB_NAMES.stringFlag, stringFlagType, { ...common, Value: flag.value });
    case 'int':
      return goFlag(GOB_NAMES.intFlag, intFlagType, { ...common, Value: flag.value });
    case 'bool':
      return goFlag(GOB_NAMES.boolFlag, boolFlagType, common);
    case 'stringSlice':
      return goFlag(GOB_NAMES.stringSliceFlag, stringSliceFlagType, { ...common, Value: flag.value });
  }
}

function goFlag<
  T extends typeof stringFlagType | typeof intFlagType | typeof boolFlagType | typeof stringSliceFlagType,
>(name: string, _type: T, value: GoValue<T>): NonNullable<GoInterfaceValue> {
  return { name, value };
}

/**
 * RPCFlags.Values as FlagValues. rancher-machine fills it with string, int, bool and
 * []string values; anything else (or nil) is left out, as the Go driver's typed
 * getters would read it as the zero value.
 */
export function flagValuesFrom(options: GoInterfaceValue, log: Logger): Map<string, FlagValue> {
  if (options === null) throw new Error('SetConfigFromFlags: no driver options were sent (nil)');
  if (options.name !== GOB_NAMES.rpcFlags) {
    throw new Error(`gob: ${options.name} is not assignable to type drivers.DriverOptions`);
  }
  const values = new Map<string, FlagValue>();
  for (const [key, value] of (options.value as RpcFlagsValue).Values) {
    if (value === null) {
      log.debug(`SetConfigFromFlags: option ${key} is nil; left out`);
      continue;
    }
    switch (value.name) {
      case 'string':
      case 'int':
      case 'bool':
      case '[]string':
        values.set(key, value.value as FlagValue);
        break;
      default:
        log.warn(`SetConfigFromFlags: option ${key} has unexpected type ${value.name}; left out`);
    }
  }
  return values;
}
