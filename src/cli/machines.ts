// A stored machine as a driver: its saved config loaded the way rancher-machine loads a
// host (SetConfigRaw), with the process's argv and environment handed to the driver so
// that a fresh --harvester-kubeconfig-content / HARVESTER_KUBECONFIG_CONTENT wins over
// the saved, possibly expired, kubeconfig. --kubeconfig <file> is the same thing from a file.
import { FLAGS } from '../driver/config/flags.js';
import { HarvesterDriver } from '../driver/harvester-driver.js';
import type { KubeClientOptions } from '../kube/client.js';
import type { CliContext } from './context.js';
import { UsageError } from './errors.js';
import { checkCredentialContent, readKubeconfigFile } from './kubeconfig-source.js';
import type { ProgressDisplay } from './progress.js';
import { driverConfigRaw } from './store/host-config.js';
import type { StoredMachine } from './store/machine-store.js';
import { keyText } from '../api/object-key.js';

export interface FreshCredentialOptions {
  /** --kubeconfig <file> */
  kubeconfig?: string;
  /** --context <name>, with --kubeconfig */
  context?: string;
  /** --harvester-kubeconfig-content (commander's attribute name) */
  harvesterKubeconfigContent?: string;
}

export interface OpenedMachine {
  machine: StoredMachine;
  driver: HarvesterDriver;
}

/** The environment the driver sees: --kubeconfig <file> stands in for HARVESTER_KUBECONFIG_CONTENT. */
export function driverEnvironment(
  ctx: CliContext,
  fresh: FreshCredentialOptions,
): Readonly<Record<string, string | undefined>> {
  if (fresh.kubeconfig && fresh.harvesterKubeconfigContent) {
    throw new UsageError('give either --kubeconfig or --harvester-kubeconfig-content, not both');
  }
  if (fresh.context && !fresh.kubeconfig) throw new UsageError('--context goes with --kubeconfig');
  if (!fresh.kubeconfig) {
    // Fresh content is a cloud credential's, as in the driver; the stored machine's is ours.
    if (fresh.harvesterKubeconfigContent)
      checkCredentialContent(fresh.harvesterKubeconfigContent, '--harvester-kubeconfig-content');
    const inEnv = ctx.env[FLAGS.kubeconfigContent.envVar];
    if (inEnv) checkCredentialContent(inEnv, FLAGS.kubeconfigContent.envVar);
    return ctx.env;
  }
  return {
    ...ctx.env,
    [FLAGS.kubeconfigContent.envVar]: readKubeconfigFile(fresh.kubeconfig, '--kubeconfig', fresh.context),
  };
}

export async function openMachine(
  ctx: CliContext,
  name: string,
  options: {
    fresh?: FreshCredentialOptions;
    progress?: ProgressDisplay;
    clientOptions?: KubeClientOptions;
  } = {},
): Promise<OpenedMachine> {
  const machine = await ctx.store.load(name);
  const env = driverEnvironment(ctx, options.fresh ?? {});
  const { progress } = options;
  const driver = new HarvesterDriver({
    argv: ctx.io.argv,
    env,
    logger: ctx.logger(progress),
    ...(progress ? { progress: (event) => progress.update(event) } : {}),
    ...(options.clientOptions ? { clientOptions: options.clientOptions } : {}),
    kubeconfigTrust: 'operator',
  });
  driver.setConfigRaw(driverConfigRaw(machine.host));
  return { machine, driver };
}

/** "default/m1": the VM behind a machine. */
export function vmRefOf(driver: HarvesterDriver): string {
  return keyText(driver.config.VMNamespace, driver.config.MachineName);
}
