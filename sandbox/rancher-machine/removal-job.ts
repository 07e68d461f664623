// A removal job for Rancher's stand-in (sandbox/rancher/rancher-standin.ts) that is Rancher's
// own: `rancher-machine rm -y --update-config <instance>` with the machine's state Secret,
// from an empty home, the credential read when the job was built in the environment
// (HARVESTER_KUBECONFIG_CONTENT), our plugin executable first on PATH. A failed run throws
// its output, which is what Rancher shows as "DeleteError: …" (the job's termination log).
import { rancherInstanceName } from '../../src/rancher/names.js';
import { redact } from '../../src/log/redact.js';
import type { RemovalJob, RemovalJobContext } from '../rancher/rancher-jobs.js';
import type { JobResult, ProvisionJobs } from './provision-jobs.js';
import { runProblem } from './rancher-machine.js';

export interface RemovalJobRun extends JobResult {
  context: RemovalJobContext;
  machineName: string;
  instanceName: string;
  ok: boolean;
}

export function rancherMachineRemovalJob(
  jobs: ProvisionJobs,
  opts: { onRun?: (run: RemovalJobRun) => void } = {},
): RemovalJob {
  return async (context) => {
    const { harvesterMachine, env } = context;
    const machineName = harvesterMachine.metadata.name;
    const instanceName = rancherInstanceName(machineName);
    const result = await jobs.remove({
      namespace: harvesterMachine.metadata.namespace ?? '',
      machineName,
      instanceName,
      env,
    });
    const problem = runProblem(result.run);
    opts.onRun?.({ ...result, context, machineName, instanceName, ok: problem === undefined });
    if (problem) {
      const output = result.run.output.trim();
      // A non-zero exit is explained by the output itself; anything else is added to it.
      const why = result.run.code !== null && result.run.code !== 0 ? '' : `rancher-machine rm ${problem}`;
      throw new Error(redact([output, why].filter(Boolean).join('\n')));
    }
  };
}
