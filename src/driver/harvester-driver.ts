// The Harvester node driver: rancher-machine's RPCServerDriver surface over the pure
// decisions (src/harvester) and the lifecycle operations (./operations). Config is the
// Go driver's JSON; the kubeconfig in use is always the freshest one handed to us.
import os from 'node:os';
import path from 'node:path';
import { createLogger, type Logger } from '../log/logger.js';
import {
  ConfigError,
  configFromFlags,
  identityProblems,
  newDriverConfig,
  type DriverConfig,
} from './config/index.js';
import type { CredentialSource } from '../harvester-access/credential-error.js';
import { cliName, createFlags, FLAGS } from './config/flags.js';
import {
  applyFreshCredential,
  parseSavedConfig,
  savedConfigFor,
  serializeSavedConfig,
  type SavedConfig,
} from './config/go-json.js';
import { HarvesterApi } from '../harvester-access/harvester-api.js';
import { generateSshKeyPairInBackground, type SshKeyPair } from './ssh-keys.js';
import type { KubeconfigTrust } from '../kube/credential-content.js';
import { kubeconfigProblems } from '../kube/kubeconfig-content.js';
import type { FlagValues, McnFlag, MachineDriver, MachineState } from './machine-driver.js';
import type { OperationContext, ProgressEvent } from './operations/context.js';
import { createMachine } from './operations/create.js';
import { dockerUrl, machineIp, machineIpv6, machineState } from './operations/machine-status.js';
import { killMachine, restartMachine, startMachine, stopMachine } from './operations/power.js';
import { preCreateCheck } from './operations/pre-create-check.js';
import { removeMachine, planMachineRemoval } from './operations/remove.js';
import { ANNOTATION_REMOVE_ALL_PVCS } from '../harvester/labels.js';
import type { RemovalPlan } from '../harvester/removal-plan.js';
import type { LoadBalancer } from '../harvester/load-balancers.js';
import type { ObjectMeta, VirtualMachine } from '../harvester/types.js';
import { isKubeError } from '../kube/errors.js';
import { KubeClient, type KubeClientOptions } from '../kube/client.js';
import { KubeconfigLoadError, loadKubeconfig, type LoadedKubeconfig } from '../kube/kubeconfig-loading.js';

export const DRIVER_NAME = 'harvester';

export interface HarvesterDriverOptions {
  /** The process arguments the plugin inherited (rancher-machine's argv). */
  argv?: readonly string[];
  /** The environment the plugin inherited. */
  env?: Readonly<Record<string, string | undefined>>;
  logger?: Logger;
  progress?: (event: ProgressEvent) => void;
  /** How often a wait without news logs a "Still waiting" line (default 15 s; tests shorten it). */
  progressIntervalMs?: number;
  /** Client tuning (request deadline, retries, request counting). */
  clientOptions?: KubeClientOptions;
  /**
   * Whose the kubeconfig content (flag, environment, saved config) is. The plugin's is a
   * cloud credential's, Rancher's tenants' input: inline credentials only (the default). The
   * CLI's is its operator's own, which it checks itself where it is a credential's.
   */
  kubeconfigTrust?: KubeconfigTrust;
  /** Makes a new SSH key pair for Create (default: RSA 2048 on libuv's thread pool). */
  newSshKey?: () => Promise<SshKeyPair>;
}

export class HarvesterDriver implements MachineDriver {
  private saved: SavedConfig = savedConfigFor(newDriverConfig());
  private source: CredentialSource = 'saved';
  private api: HarvesterApi | undefined;
  private apiKubeconfig: string | undefined;
  private readonly argv: readonly string[];
  private readonly env: Readonly<Record<string, string | undefined>>;
  private readonly log: Logger;
  private readonly trust: KubeconfigTrust;
  /** The SSH key pair for the Create after a PreCreateCheck, made while the check runs. */
  private keyInAdvance: Promise<SshKeyPair> | undefined;

  constructor(private readonly options: HarvesterDriverOptions = {}) {
    this.trust = options.kubeconfigTrust ?? 'credential';
    this.argv = options.argv ?? [];
    this.env = options.env ?? {};
    this.log = options.logger ?? createLogger();
  }

  get config(): DriverConfig {
    return this.saved.driver;
  }

  /** Where the kubeconfig in use came from: argv, env, the saved config, or create flags. */
  get credentialSource(): CredentialSource {
    return this.source;
  }

  driverName(): string {
    return DRIVER_NAME;
  }

  getCreateFlags(): McnFlag[] {
    return createFlags();
  }

  setConfigRaw(json: Uint8Array): void {
    this.saved = parseSavedConfig(json, this.saved);
    const fresh = applyFreshCredential(this.saved.driver, this.argv, this.env);
    this.saved = { ...this.saved, driver: fresh.config };
    this.source = fresh.source;
    if (fresh.source !== 'saved') {
      this.log.debug(
        `Using the kubeconfig ${fresh.source === 'argv' ? 'from --harvester-kubeconfig-content' : 'from HARVESTER_KUBECONFIG_CONTENT'} instead of the saved one`,
      );
    }
  }

  getConfigRaw(): Uint8Array {
    return Buffer.from(serializeSavedConfig(this.saved), 'utf8');
  }

  setConfigFromFlags(values: FlagValues): void {
    this.saved = { ...this.saved, driver: configFromFlags(values, this.saved.driver, this.trust) };
    this.source = 'flags';
  }

  getMachineName(): string {
    return this.config.MachineName;
  }

  /** BaseDriver.GetSSHKeyPath: <StorePath>/machines/<name>/id_rsa unless set. */
  getSSHKeyPath(): string {
    const cfg = this.config;
    if (!cfg.SSHKeyPath && cfg.StorePath && cfg.MachineName) {
      cfg.SSHKeyPath = path.join(cfg.StorePath, 'machines', cfg.MachineName, 'id_rsa');
    }
    return cfg.SSHKeyPath;
  }

  getSSHUsername(): string {
    return this.config.SSHUser || 'root';
  }

  getSSHPort(): number {
    return this.config.SSHPort || 22;
  }

  getSSHHostname(): Promise<string> {
    return this.getIP();
  }

  async getURL(): Promise<string> {
    return dockerUrl(await this.getIP());
  }

  getIP(): Promise<string> {
    return this.run((ctx) => machineIp(ctx));
  }

  getIPv6(): Promise<string> {
    return this.run((ctx) => machineIpv6(ctx));
  }

  getState(): Promise<MachineState> {
    return this.run((ctx) => machineState(ctx));
  }

  preCreateCheck(): Promise<void> {
    // rancher-machine calls Create next: its new SSH key is made meanwhile, beside the check's requests.
    if (!this.config.SSHPrivateKeyPath && !this.keyInAdvance) {
      this.keyInAdvance = this.newSshKey();
      this.keyInAdvance.catch(() => undefined); // Create makes one itself if this failed
    }
    return this.run((ctx) => preCreateCheck(ctx));
  }

  create(): Promise<void> {
    const ready = this.keyInAdvance;
    this.keyInAdvance = undefined;
    const newSshKey = ready ? () => ready.catch(() => this.newSshKey()) : () => this.newSshKey();
    return this.run((ctx) => createMachine({ ...ctx, newSshKey }));
  }

  private newSshKey(): Promise<SshKeyPair> {
    return (this.options.newSshKey ?? generateSshKeyPairInBackground)();
  }

  async remove(): Promise<void> {
    await this.run((ctx) => removeMachine(ctx));
  }

  /**
   * What remove() would delete, without changing anything (the CLI's dry run).
   * `wholeCluster` previews it as if Rancher had annotated the VM for a whole-cluster deletion.
   */
  planRemoval(options: { wholeCluster?: boolean } = {}): Promise<RemovalPlan | undefined> {
    return this.run(async (ctx) => {
      const asWholeCluster = (vm: VirtualMachine): VirtualMachine => ({
        ...vm,
        metadata: {
          ...vm.metadata,
          annotations: { ...vm.metadata.annotations, [ANNOTATION_REMOVE_ALL_PVCS]: 'true' },
        },
      });
      const planned = await planMachineRemoval(ctx, options.wholeCluster ? { adjust: asWholeCluster } : {});
      return planned?.plan;
    });
  }

  /**
   * What a whole-cluster deletion does beyond the VM: the load balancers in the VM's
   * namespace, the VMs there and Harvester's version (the dry run decides with
   * src/harvester/load-balancers.ts). A credential that may not list load balancers, or a
   * Harvester that serves none, is an answer, not an error.
   */
  clusterLoadBalancers(): Promise<
    | {
        loadBalancers: LoadBalancer[];
        vms: Array<{ metadata: ObjectMeta }>;
        serverVersion: string | undefined;
      }
    | { notListed: string }
  > {
    return this.run(async (ctx) => {
      const ns = ctx.config.VMNamespace;
      try {
        const [loadBalancers, vms, setting] = await Promise.all([
          ctx.api.listLoadBalancers(ns),
          ctx.api.listVms(ns),
          ctx.api.findSetting('server-version').catch(() => undefined),
        ]);
        return { loadBalancers, vms, serverVersion: setting?.value || setting?.default || undefined };
      } catch (err) {
        if (isKubeError(err, 'Forbidden', 'NotFound')) return { notListed: err.message };
        throw err;
      }
    });
  }

  start(): Promise<void> {
    return this.run((ctx) => startMachine(ctx));
  }

  stop(): Promise<void> {
    return this.run((ctx) => stopMachine(ctx));
  }

  restart(): Promise<void> {
    return this.run((ctx) => restartMachine(ctx));
  }

  kill(): Promise<void> {
    return this.run((ctx) => killMachine(ctx));
  }

  close(): void {
    this.api?.close();
    this.api = undefined;
  }

  private harvesterApi(): HarvesterApi {
    const loaded = this.kubeconfig();
    const content = loaded.content ?? loaded.source;
    if (!this.api || this.apiKubeconfig !== content) {
      // A saved config.json skipped the flag checks: say which setting is broken rather than
      // let the client's loader fail with "the kubeconfig has no current cluster".
      const flag = cliName(FLAGS.kubeconfigContent);
      // Content handed to the driver is checked by its trust before anything reads it; files
      // found by client-go's rules (no content given) are the operator's own.
      const trust = 'kubeConfig' in loaded ? 'operator' : this.trust;
      const problems = loaded.content ? kubeconfigProblems(loaded.content, trust) : [];
      if (problems.length > 0) {
        throw new ConfigError(problems.map((p) => ({ flag, message: `${flag}: the kubeconfig ${p}` })));
      }
      this.api?.close();
      this.api =
        'kubeConfig' in loaded && loaded.content === undefined
          ? new HarvesterApi(KubeClient.fromLoaded(loaded, this.options.clientOptions), this.source)
          : HarvesterApi.fromKubeconfig(content, this.source, { ...this.options.clientOptions, trust });
      this.apiKubeconfig = content;
    }
    return this.api;
  }

  /**
   * The configured kubeconfig content; without one, the Go driver's fallback: client-go's
   * loading rules ($KUBECONFIG, ~/.kube/config, then k3s's files as its loader adds them), and
   * with no file at all the pod's service account.
   */
  private kubeconfig(): LoadedKubeconfig | { content: string; source: string } {
    if (this.config.KubeConfigContent) return { content: this.config.KubeConfigContent, source: 'content' };
    const home = this.env['HOME'] ?? os.homedir();
    try {
      return loadKubeconfig({
        env: this.env,
        home,
        extraFiles: [path.join(home, '.kube', 'k3s.yaml'), '/etc/rancher/k3s/k3s.yaml'],
        inCluster: 'fallback',
      });
    } catch (err) {
      if (!(err instanceof KubeconfigLoadError)) throw err;
      throw new ConfigError([
        {
          flag: '--harvester-kubeconfig-content',
          message: `--harvester-kubeconfig-content: no kubeconfig for the Harvester cluster (set the flag, HARVESTER_KUBECONFIG_CONTENT or KUBECONFIG): ${err.message}`,
        },
      ]);
    }
  }

  private async run<T>(operation: (ctx: OperationContext) => Promise<T>): Promise<T> {
    // Every call names its VM by these two: an empty or malformed one (a hostile config.json)
    // would address the whole collection (GET lists, DELETE deletes every VM) or another object.
    const identity = identityProblems(this.config);
    if (identity.length > 0) throw new ConfigError(identity);
    const ctx: OperationContext = {
      config: this.config,
      api: this.harvesterApi().forOperation(),
      log: this.log,
      sshKeyPath: this.getSSHKeyPath(),
      kubeconfigTrust: this.trust,
      ...(this.options.progress ? { progress: this.options.progress } : {}),
      ...(this.options.progressIntervalMs !== undefined
        ? { progressIntervalMs: this.options.progressIntervalMs }
        : {}),
    };
    return operation(ctx);
  }
}
