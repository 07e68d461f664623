// KubeVirt's VirtualMachine.RunStrategy(): spec.running and spec.runStrategy are mutually
// exclusive; neither means Halted.
import type { RunStrategy, VirtualMachine } from '../types.js';

/** undefined when both fields are set (KubeVirt reports an error then). */
export function runStrategyOf(vm: VirtualMachine): RunStrategy | undefined {
  const { running, runStrategy } = vm.spec;
  if (running !== undefined && running !== null && runStrategy !== undefined) return undefined;
  if (running !== undefined && running !== null) return running ? 'Always' : 'Halted';
  return runStrategy ?? 'Halted';
}
