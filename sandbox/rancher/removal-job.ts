// The default removal job of Rancher's stand-in (rancher-standin.ts): what Rancher's
// `rm -y --update-config <instance>` Job does, with our driver in process instead of a pod:
// the saved config from the `<m>-machine-state` Secret, the current credential from the
// environment (the driver's setConfigRaw lets HARVESTER_KUBECONFIG_CONTENT win over the saved
// kubeconfig), then Remove.
import { rancherInstanceName } from '../../src/rancher/names.js';
import { HarvesterDriver } from '../../src/driver/harvester-driver.js';
import type { KubeClient } from '../../src/kube/client.js';
import { silentLogger, type Logger } from '../../src/log/logger.js';
import type { RemovalJob } from './rancher-jobs.js';
import { readSavedDriverConfig } from './machine-state.js';

export function driverRemovalJob(rancher: KubeClient, logger: Logger = silentLogger): RemovalJob {
  return async ({ harvesterMachine, env }) => {
    const namespace = harvesterMachine.metadata.namespace ?? '';
    const machineName = harvesterMachine.metadata.name;
    const saved = await readSavedDriverConfig(
      rancher,
      namespace,
      machineName,
      rancherInstanceName(machineName),
    );
    const driver = new HarvesterDriver({ env, argv: [], logger });
    driver.setConfigRaw(Buffer.from(JSON.stringify(saved)));
    await driver.remove();
  };
}
