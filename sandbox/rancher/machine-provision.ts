// Rancher's machine provisioning for one rke-machine.cattle.io HarvesterMachine, as Rancher's
// own controllers run it (rancher/rancher pkg/controllers/capr/machineprovision controller.go
// and args.go, pkg/controllers/capr/machinenodelookup; docs/upstream/rancher.md#provisioning-jobs), with the jobs pluggable:
// - OnChange: the `machine-provision-remove` finalizer, the `rke.cattle.io/capi-machine-name`
//   label, then — once the CAPI Cluster's infrastructure is ready and Cluster API copied the
//   bootstrap Secret's name into the Machine — the create job (condition CreateJob), after which
//   the guest's node registers and machinenodelookup sets spec.providerID and status.addresses;
//   status.ready is "providerID set" (args.go), which Cluster API reads as the machine's readiness;
// - OnRemove (`machine-provision-remove`): no job while a MachineSet still owns the machine or
//   when no create job ever ran; else the rm job with the credential read when the job is built,
//   retried like backoffLimit 3, the finalizer removed once a run succeeded (or the job failed
//   and force-machine-remove is set).
import {
  CAPI_LABEL_CLUSTER_NAME,
  RANCHER_ANNOTATION_FORCE_MACHINE_REMOVE,
  RANCHER_FINALIZER_MACHINE_PROVISION_REMOVE,
} from '../../src/rancher/labels.js';
import {
  isAlreadyExists,
  isConflict,
  isKubeError,
  isNotFound,
  type KubeClient,
} from '../../src/kube/index.js';
import { Resources, type KubeObject, type ResourceType } from '../../src/kube/resources.js';
import { formatKey, keyOf, keyText, parseKey } from '../../src/api/object-key.js';
import type { Logger } from '../../src/log/logger.js';
import { rancherInstanceName } from '../../src/rancher/names.js';
import { registerGuestNode } from './guest-node.js';
import type { CreateJob, JobRun, RemovalJob } from './rancher-jobs.js';
import { machineStateSecret } from './machine-state.js';
import { credentialEnv } from './rancher-jobs.js';

export const LABEL_CAPI_MACHINE_NAME = 'rke.cattle.io/capi-machine-name';

export type {
  CapiCondition as Condition,
  CapiMachine as StandInMachine,
  HarvesterMachine as StandInHarvesterMachine,
} from '../../src/api/capi.js';
import type {
  CapiCondition as Condition,
  CapiMachine as StandInMachine,
  HarvesterMachine as StandInHarvesterMachine,
} from '../../src/api/capi.js';

export interface MachineProvisionDeps {
  rancher: KubeClient;
  /** The guest cluster's apiserver, where its nodes register (through its `<cluster>-kubeconfig`). */
  downstream(namespace: string, cluster: string): Promise<KubeClient>;
  machine(namespace: string, name: string): StandInMachine | undefined;
  capiCluster(
    namespace: string,
    name: string,
  ): (KubeObject & { status?: { infrastructureReady?: boolean } }) | undefined;
  provisioningCluster(
    namespace: string,
    name: string,
  ): (KubeObject & { spec?: { cloudCredentialSecretName?: string | null } }) | undefined;
  harvesterMachine(key: string): StandInHarvesterMachine | undefined;
  createJob: CreateJob;
  removalJob: RemovalJob;
  backoffLimit: number;
  retryDelayMs: number;
  requeue(key: string): void;
  logger: Logger;
}

const deleting = (o: KubeObject | undefined): boolean => Boolean(o?.metadata.deletionTimestamp);
const condition = (hm: StandInHarvesterMachine, type: string): Condition | undefined =>
  hm.status?.conditions?.find((c) => c.type === type);
const controllerOwner = (o: KubeObject): { kind?: string; name?: string } | undefined =>
  (
    o.metadata.ownerReferences as Array<{ kind?: string; name?: string; controller?: boolean }> | undefined
  )?.find((r) => r.controller);

export class MachineProvision {
  readonly runs: JobRun[] = [];
  /** What each create job said the guest node's addresses are. */
  private readonly addresses = new Map<string, Array<{ type: string; address: string }>>();
  private readonly jobs = new Map<
    string,
    { kind: 'create' | 'remove'; done: boolean; ok: boolean; promise: Promise<void> }
  >();

  constructor(private readonly deps: MachineProvisionDeps) {}

  /** Every job still running (stop waits for them). */
  running(): Promise<void[]> {
    return Promise.all([...this.jobs.values()].map((j) => j.promise));
  }

  async reconcile(key: string): Promise<void> {
    const hm = this.deps.harvesterMachine(key);
    if (!hm) return;
    if (deleting(hm)) return this.onRemove(key, hm);
    return this.onChange(key, hm);
  }

  private at(o: KubeObject, subresource?: string): { namespace: string; name: string; subresource?: string } {
    return {
      namespace: o.metadata.namespace ?? '',
      name: o.metadata.name,
      ...(subresource ? { subresource } : {}),
    };
  }

  /** A merge patch conditional on the resourceVersion the decision was made on. */
  private async patch(
    type: ResourceType,
    o: KubeObject,
    body: Record<string, unknown>,
    subresource?: string,
  ): Promise<void> {
    const metadata = {
      resourceVersion: o.metadata.resourceVersion,
      ...((body.metadata as object | undefined) ?? {}),
    };
    try {
      await this.deps.rancher.patch(type, this.at(o, subresource), { ...body, metadata });
    } catch (err) {
      if (isKubeError(err, 'NotFound', 'Conflict')) return;
      throw err;
    }
  }

  /**
   * Rancher's UpdateStatus: read, merge, write with that resourceVersion (a Conflict reads again).
   * Only this stand-in writes a HarvesterMachine's status, but its reconciles and its jobs' ends race.
   */
  private async setConditions(
    key: string,
    set: Condition[],
    extra: Record<string, unknown> = {},
  ): Promise<void> {
    const { namespace, name } = parseKey(key);
    for (let attempt = 0; attempt < 5; attempt++) {
      const hm = await this.deps.rancher.find<StandInHarvesterMachine>(Resources.harvesterMachine, {
        namespace,
        name,
      });
      if (!hm) return;
      const kept = (hm.status?.conditions ?? []).filter((c) => !set.some((x) => x.type === c.type));
      try {
        await this.deps.rancher.patch(
          Resources.harvesterMachine,
          { namespace, name, subresource: 'status' },
          {
            metadata: { resourceVersion: hm.metadata.resourceVersion },
            status: { ...extra, conditions: [...kept, ...set] },
          },
        );
        return;
      } catch (err) {
        if (isNotFound(err)) return;
        if (!isConflict(err)) throw err;
      }
    }
  }

  private async onChange(key: string, hm: StandInHarvesterMachine): Promise<void> {
    const ns = hm.metadata.namespace ?? '';
    if (!(hm.metadata.finalizers ?? []).includes(RANCHER_FINALIZER_MACHINE_PROVISION_REMOVE)) {
      await this.patch(Resources.harvesterMachine, hm, {
        metadata: {
          finalizers: [...(hm.metadata.finalizers ?? []), RANCHER_FINALIZER_MACHINE_PROVISION_REMOVE],
        },
      });
      return;
    }
    const owner = controllerOwner(hm);
    const machine = owner?.kind === 'Machine' ? this.deps.machine(ns, owner.name ?? '') : undefined;
    if (!machine) return; // "waiting: machine to be set as owner reference"
    if (!hm.metadata.labels?.[LABEL_CAPI_MACHINE_NAME]) {
      await this.patch(Resources.harvesterMachine, hm, {
        metadata: { labels: { [LABEL_CAPI_MACHINE_NAME]: machine.metadata.name } },
      });
      return;
    }
    const clusterName = machine.spec?.clusterName ?? '';
    if (!this.deps.capiCluster(ns, clusterName)?.status?.infrastructureReady) return;
    if (!machine.spec?.bootstrap?.dataSecretName) return;

    const created = condition(hm, 'CreateJob');
    if (!created) {
      // The cache may not show the job's first condition yet: one create job per machine.
      if (!this.jobs.has(key)) this.startJob('create', key, hm, clusterName);
      return;
    }
    if (created.status !== 'True' || hm.spec?.providerID) return;
    await this.registerNode(hm, machine);
  }

  /** The guest's node joins its cluster; machinenodelookup copies its providerID and addresses. */
  private async registerNode(hm: StandInHarvesterMachine, machine: StandInMachine): Promise<void> {
    const key = formatKey(keyOf(hm));
    const cluster = machine.spec?.clusterName ?? hm.metadata.labels?.[CAPI_LABEL_CLUSTER_NAME] ?? '';
    const downstream = await this.deps.downstream(hm.metadata.namespace ?? '', cluster);
    const providerID = await registerGuestNode(downstream, {
      hostname: rancherInstanceName(hm.metadata.name),
      machineUid: machine.metadata.uid ?? '',
      addresses: this.addresses.get(key) ?? [],
    });
    // machinenodelookup: addresses (status), then providerID (spec); the next reconcile's status
    // says ready, since ready is "providerID set" (args.go).
    await this.setConditions(key, [], { addresses: this.addresses.get(key) ?? [] });
    await this.deps.rancher.patch(Resources.harvesterMachine, this.at(hm), { spec: { providerID } });
    await this.setConditions(key, [], { ready: true });
  }

  private async onRemove(key: string, hm: StandInHarvesterMachine): Promise<void> {
    if (!(hm.metadata.finalizers ?? []).includes(RANCHER_FINALIZER_MACHINE_PROVISION_REMOVE)) return;
    const owner = controllerOwner(hm);
    const created = condition(hm, 'CreateJob');
    if (owner?.kind === 'MachineSet' || !created) return this.removeFinalizer(hm);
    if (created.status === 'Unknown') return; // the create job's end requeues
    const job = this.jobs.get(key);
    if (!job || job.kind !== 'remove') {
      const ns = hm.metadata.namespace ?? '';
      const clusterName = hm.metadata.labels?.[CAPI_LABEL_CLUSTER_NAME] ?? '';
      await this.setConditions(key, [
        { type: 'DeleteJob', status: 'Unknown', message: 'creating machine deletion job' },
      ]);
      this.startJob(
        'remove',
        key,
        hm,
        this.deps.provisioningCluster(ns, clusterName)?.metadata.name ?? clusterName,
      );
      return;
    }
    if (!job.done) return;
    if (job.ok || hm.metadata.annotations?.[RANCHER_ANNOTATION_FORCE_MACHINE_REMOVE] === 'true')
      return this.removeFinalizer(hm);
    await this.recordFailure(hm, this.runs.filter((r) => r.machine === key).pop()?.error ?? 'unknown error');
  }

  private async removeFinalizer(hm: StandInHarvesterMachine): Promise<void> {
    await this.patch(Resources.harvesterMachine, hm, {
      metadata: {
        finalizers: (hm.metadata.finalizers ?? []).filter(
          (f) => f !== RANCHER_FINALIZER_MACHINE_PROVISION_REMOVE,
        ),
      },
    });
  }

  /** As Rancher shows it: the infra machine's failure fields (Cluster API mirrors them on the Machine). */
  private async recordFailure(hm: StandInHarvesterMachine, error: string): Promise<void> {
    const ns = hm.metadata.namespace ?? '';
    const name = hm.metadata.name;
    const message = `failed deleting server [${keyText(ns, name)}] of kind (HarvesterMachine) for machine ${hm.metadata.labels?.[LABEL_CAPI_MACHINE_NAME] ?? name} in infrastructure provider: DeleteError: ${error}`;
    if (hm.status?.failureMessage === message) return;
    await this.setConditions(
      formatKey(keyOf(hm)),
      [{ type: 'DeleteJob', status: 'False', reason: 'DeleteError', message }],
      {
        failureReason: 'DeleteError',
        failureMessage: message,
      },
    );
  }

  /** What Rancher's machineprovision does when it builds a job: read the credential now. */
  private async buildEnv(
    hm: StandInHarvesterMachine,
  ): Promise<{ env: Record<string, string>; credential: string | undefined }> {
    const ns = hm.metadata.namespace ?? '';
    const pc = this.deps.provisioningCluster(ns, hm.metadata.labels?.[CAPI_LABEL_CLUSTER_NAME] ?? '');
    const ref =
      hm.spec?.common?.cloudCredentialSecretName ||
      pc?.spec?.cloudCredentialSecretName ||
      hm.status?.cloudCredentialSecretName;
    if (!ref) return { env: {}, credential: undefined };
    const colon = ref.indexOf(':');
    const at =
      colon > 0
        ? { namespace: ref.slice(0, colon), name: ref.slice(colon + 1) }
        : { namespace: ns, name: ref };
    const secret = await this.deps.rancher.get<KubeObject & { data?: Record<string, string> }>(
      Resources.secret,
      at,
    );
    return { env: credentialEnv(secret.data), credential: ref };
  }

  private startJob(
    kind: 'create' | 'remove',
    key: string,
    hm: StandInHarvesterMachine,
    clusterName: string,
  ): void {
    const entry = { kind, done: false, ok: false, promise: Promise.resolve() };
    this.jobs.set(key, entry);
    entry.promise = (
      kind === 'create' ? this.runCreate(key, hm, clusterName) : this.runRemoval(key, clusterName)
    )
      .catch((err: unknown) => {
        this.deps.logger.warn('machine job failed', {
          machine: key,
          kind,
          error: err instanceof Error ? err.message : String(err),
        });
        return false;
      })
      .then((ok) => {
        Object.assign(entry, { done: true, ok });
        this.deps.requeue(key);
      });
  }

  /**
   * Rancher's controller retries building a Job and records its end from the Job's status,
   * which outlives an apiserver restart: its writes here wait out a transient error, so a
   * restart neither loses a create job before it starts nor leaves its condition Unknown.
   */
  private async throughOutages<T>(fn: () => Promise<T>, forMs = 90_000): Promise<T> {
    const deadline = Date.now() + forMs;
    for (;;) {
      try {
        return await fn();
      } catch (err) {
        if (!this.deps.rancher.isTransient(err) || Date.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, 1_000));
      }
    }
  }

  private async runCreate(key: string, hm: StandInHarvesterMachine, clusterName: string): Promise<boolean> {
    await this.throughOutages(() =>
      this.setConditions(key, [
        { type: 'CreateJob', status: 'Unknown', message: 'creating machine provision job' },
      ]),
    );
    await this.throughOutages(() => this.ensureStateSecret(hm));
    const { env, credential } = await this.throughOutages(() => this.buildEnv(hm));
    const run: JobRun = {
      kind: 'create',
      machine: key,
      attempt: 1,
      credential,
      startedAt: Date.now(),
    };
    this.runs.push(run);
    let outcome: Condition[];
    try {
      const result = await this.deps.createJob({ harvesterMachine: hm, env, clusterName, attempt: 1 });
      if (result?.addresses) this.addresses.set(key, result.addresses);
      run.ok = true;
      outcome = [
        { type: 'CreateJob', status: 'True' },
        { type: 'Ready', status: 'True' },
      ];
    } catch (err) {
      run.ok = false;
      run.error = err instanceof Error ? err.message : String(err);
      outcome = [{ type: 'CreateJob', status: 'False', reason: 'CreateError', message: run.error }];
    }
    await this.throughOutages(() =>
      this.setConditions(key, outcome, {
        jobName: `${hm.metadata.name}-machine-provision`,
        ...(credential ? { cloudCredentialSecretName: credential } : {}),
      }),
    );
    return run.ok;
  }

  private async runRemoval(key: string, clusterName: string): Promise<boolean> {
    for (let attempt = 1; attempt <= 1 + this.deps.backoffLimit; attempt++) {
      const hm = this.deps.harvesterMachine(key);
      if (!hm) return true;
      const run: JobRun = {
        kind: 'remove',
        machine: key,
        attempt,
        credential: undefined,
        startedAt: Date.now(),
      };
      this.runs.push(run);
      try {
        const { env, credential } = await this.buildEnv(hm);
        run.credential = credential;
        await this.deps.removalJob({ harvesterMachine: hm, env, clusterName, attempt });
        run.ok = true;
        return true;
      } catch (err) {
        run.ok = false;
        run.error = err instanceof Error ? err.message : String(err);
        this.deps.logger.warn('removal job failed', { machine: key, attempt, error: run.error });
        if (attempt <= this.deps.backoffLimit)
          await new Promise((r) => setTimeout(r, this.deps.retryDelayMs));
      }
    }
    return false;
  }

  /** Rancher creates `<m>-machine-state` (empty, owned by the infra machine) when it builds the first job. */
  private async ensureStateSecret(hm: StandInHarvesterMachine): Promise<void> {
    const name = hm.metadata.name;
    try {
      await this.deps.rancher.create(
        Resources.secret,
        machineStateSecret({
          namespace: hm.metadata.namespace ?? '',
          machineName: name,
          instanceName: rancherInstanceName(name),
          owner: { ...hm, apiVersion: 'rke-machine.cattle.io/v1', kind: 'HarvesterMachine' },
        }),
      );
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
  }
}
