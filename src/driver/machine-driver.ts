// The surface rancher-machine drives over RPC (RPCServerDriver), as a TypeScript
// interface. The plugin server, the CLI and the controller all go through it.

import { MachineState } from '../harvester/machine-state.js';

export { MachineState };

export type McnFlag =
  | { kind: 'string'; name: string; usage: string; envVar: string; value: string }
  | { kind: 'int'; name: string; usage: string; envVar: string; value: number }
  | { kind: 'bool'; name: string; usage: string; envVar: string }
  | { kind: 'stringSlice'; name: string; usage: string; envVar: string; value: string[] };

/** Values of RPCFlags.Values: gob interface values of type string, int, bool or []string. */
export type FlagValue = string | number | boolean | string[];
export type FlagValues = ReadonlyMap<string, FlagValue>;

export interface MachineDriver {
  driverName(): string;
  getCreateFlags(): McnFlag[];
  /** json.Unmarshal into the existing driver; re-reads the kubeconfig from argv/env. */
  setConfigRaw(json: Uint8Array): void;
  /** json.Marshal(driver): Go field names, BaseDriver fields flattened. */
  getConfigRaw(): Uint8Array;
  setConfigFromFlags(values: FlagValues): void;
  getMachineName(): string;
  getSSHKeyPath(): string;
  getSSHUsername(): string;
  getSSHPort(): number;
  getSSHHostname(): Promise<string>;
  getURL(): Promise<string>;
  getIP(): Promise<string>;
  getIPv6(): Promise<string>;
  getState(): Promise<MachineState>;
  preCreateCheck(): Promise<void>;
  create(): Promise<void>;
  remove(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
  restart(): Promise<void>;
  kill(): Promise<void>;
}
