// Rancher's machine-provision Jobs (docs/upstream/rancher.md#provisioning-jobs) with the real
// rancher-machine and our plugin executable. Each machine gets a directory that plays its Job's pod:
// - bin/: the plugin, hard-linked, so the survivor check sees only this job's processes
//   (create jobs of several machines run at once, as Rancher runs them);
// - home/: HOME, recreated empty for every job: the store comes from the machine's
//   `<m>-machine-state` Secret, whose tar holds absolute paths, so every job of one
//   machine must use the same home path (as every pod has /home/machine);
// - tmp/: TMPDIR.
// rancher-machine reaches Rancher's local cluster (the Secret) through $KUBECONFIG, as the
// pod would through its in-cluster config; the credential arrives in the environment.
import fs from 'node:fs';
import path from 'node:path';
import { registerSecret } from '../../src/log/redact.js';
import { machineStateSecretName } from '../rancher/machine-state.js';
import { installPlugin } from './plugin-executable.js';
import { pluginProcesses } from './plugin-processes.js';
import {
  INSTALL_SCRIPT,
  rancherCreateArgs,
  rancherRemoveArgs,
  type HarvesterConfigValue,
} from './rancher-job.js';
import { MachineCli, type MachineRun } from './rancher-machine.js';

export interface ProvisionJobsOptions {
  /** A directory the caller owns and removes; each machine's "pod" lives under it. */
  root: string;
  rancherMachine: string;
  pluginExecutable: string;
  /** Admin of Rancher's local cluster (written to a 0600 file, never printed). */
  rancherKubeconfig: string;
  /** Sees every command's output (see MachineCliOptions.onOutput). */
  onOutput?: (source: string, text: string) => void;
  /** Per command; default 3 minutes (the driver's own waits are shorter). */
  timeoutMs?: number;
}

export interface MachineJob {
  /** Namespace of the HarvesterMachine and its state Secret (fleet-default). */
  namespace: string;
  /** The HarvesterMachine's name: the state Secret is `<machineName>-machine-state`. */
  machineName: string;
  /** The VM's name (SafeConcatName of the machine name). */
  instanceName: string;
  /** The job's environment from the cloud credential (HARVESTER_KUBECONFIG_CONTENT, …). */
  env: Record<string, string>;
}

export interface JobResult {
  args: string[];
  run: MachineRun;
}

export class ProvisionJobs {
  private readonly rancherKubeconfigPath: string;
  private readonly installScriptPath: string;
  private readonly aborts = new Set<AbortController>();
  private readonly pluginPaths = new Set<string>();
  private closed = false;

  constructor(private readonly options: ProvisionJobsOptions) {
    fs.mkdirSync(options.root, { recursive: true, mode: 0o700 });
    this.rancherKubeconfigPath = path.join(options.root, 'rancher-local.kubeconfig');
    fs.writeFileSync(this.rancherKubeconfigPath, options.rancherKubeconfig, { mode: 0o600 });
    // What Rancher mounts at /run/secrets/machine/value.
    this.installScriptPath = path.join(options.root, 'install.sh');
    fs.writeFileSync(this.installScriptPath, INSTALL_SCRIPT, { mode: 0o600 });
  }

  /** The "pod" of a machine's jobs, its home recreated empty. */
  private pod(job: MachineJob): MachineCli {
    const dir = path.join(this.options.root, 'jobs', job.machineName);
    const binDir = path.join(dir, 'bin');
    if (!fs.existsSync(path.join(binDir, 'docker-machine-driver-harvester')))
      installPlugin(this.options.pluginExecutable, binDir);
    for (const [k, v] of Object.entries(job.env)) if (/KUBECONFIG_CONTENT/.test(k)) registerSecret(v);
    const cli = new MachineCli({
      binary: this.options.rancherMachine,
      binDir,
      home: path.join(dir, 'home'),
      tmpDir: path.join(dir, 'tmp'),
      env: { ...job.env, KUBECONFIG: this.rancherKubeconfigPath },
      ...(this.options.onOutput ? { onOutput: this.options.onOutput } : {}),
    });
    this.pluginPaths.add(cli.pluginPath);
    cli.freshHome();
    return cli;
  }

  private async runJob(cli: MachineCli, args: string[]): Promise<JobResult> {
    if (this.closed) throw new Error('the provision jobs are shut down: no new job is started');
    const abort = new AbortController();
    this.aborts.add(abort);
    try {
      const run = await cli.run(args, { timeoutMs: this.options.timeoutMs ?? 180_000, signal: abort.signal });
      return { args, run };
    } finally {
      this.aborts.delete(abort);
    }
  }

  /** The create job: `create --driver=harvester --custom-install-script=… <pool flags> --harvester-cluster-name=… <instance>`. */
  create(
    job: MachineJob & { clusterName: string; config: Record<string, HarvesterConfigValue> },
  ): Promise<JobResult> {
    const cli = this.pod(job);
    return this.runJob(
      cli,
      rancherCreateArgs({
        instance: job.instanceName,
        clusterName: job.clusterName,
        installScript: this.installScriptPath,
        config: job.config,
        secretStore: stateSecret(job),
      }),
    );
  }

  /** The removal job: `rm -y --update-config <instance>`, from an empty home. */
  remove(job: MachineJob): Promise<JobResult> {
    const cli = this.pod(job);
    return this.runJob(cli, rancherRemoveArgs({ instance: job.instanceName, secretStore: stateSecret(job) }));
  }

  /** Kills every running command (their plugins are then killed by the survivor check). */
  abortAll(): void {
    for (const abort of this.aborts) abort.abort();
  }

  /** Kills every running command and refuses new ones (shutting down: no retry may start a job). */
  close(): void {
    this.closed = true;
    this.abortAll();
  }

  /** Synchronous last resort at exit: kills any plugin process a job left. */
  killLeftovers(): void {
    this.close();
    for (const pluginPath of this.pluginPaths)
      for (const p of pluginProcesses(pluginPath)) {
        try {
          process.kill(p.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
  }

  /** Plugin processes of these jobs still running (none expected between jobs). */
  leftoverPlugins(): number {
    let n = 0;
    for (const pluginPath of this.pluginPaths) n += pluginProcesses(pluginPath).length;
    return n;
  }
}

const stateSecret = (job: MachineJob): { namespace: string; name: string } => ({
  namespace: job.namespace,
  name: machineStateSecretName(job.machineName),
});
