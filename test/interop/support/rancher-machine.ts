// rancher-machine as the interop tests run it: the sandbox's runner
// (sandbox/rancher-machine/rancher-machine.ts) plus the secrets scan's hook, so every
// command's output (which holds what the plugin printed) is kept for the scan after the suite.
import {
  MachineCli as SandboxMachineCli,
  type MachineCliOptions,
} from '../../../sandbox/rancher-machine/rancher-machine.js';
import { recordOutput } from '../../../sandbox/secret-ledger.js';

// bench/plugin-bench.ts imports these from here.
export {
  describeRun,
  rancherMachineBinary,
  rancherMachineSkipReason,
  redactArgs,
  type MachineCliOptions,
  type MachineRun,
} from '../../../sandbox/rancher-machine/rancher-machine.js';

export class MachineCli extends SandboxMachineCli {
  constructor(options: MachineCliOptions) {
    super({ onOutput: recordOutput, ...options });
  }
}
