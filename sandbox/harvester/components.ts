// Harvester's own `webhook` and `harvester` (its controllers) against the sandbox's Harvester
// control plane, as Harvester's chart runs them (deploy/charts/harvester v1.8.0:
// templates/deployment.yaml, rbac.yaml, serviceaccount.yaml, service.yaml), built once from the
// Go module proxy (build-harvester.sh). Facts and differences: docs/upstream/harvester-own.md.
//
// - Both run as the chart's service account `harvester` in `harvester-system`, which the chart
//   binds to cluster-admin, with a token of it in a file as a pod has (the webhook reads that file).
// - Harvester's own CRDs (the module's deploy/charts/harvester-crd, but KubeVirt's: virt-operator's
//   own are installed by sandbox/kubevirt) go in before kube-controller-manager starts; the
//   Longhorn, Rancher, monitoring, logging, fleet, Cluster API and node-manager CRDs its
//   controllers need, `harvester` creates itself at start (pkg/data/crd.go).
// - The webhook makes its own CA and serving certificate (Secrets harvester-webhook-ca and
//   harvester-webhook-tls) and registers `harvester-validator` and `harvester-mutator` itself,
//   naming the chart's Service harvester-webhook on port 443; its configurations are left as it
//   writes them. No pod network here: kube-apiserver reaches that Service through the sandbox's
//   service proxy (control-plane/service-proxy.ts), which tunnels harvester-webhook.harvester-system.svc:443
//   to the webhook's port on 127.0.0.1 (see build-harvester.sh), as kube-proxy would to the pod.
// - `harvester` opens no HTTP(S) port (its steve API is not what the driver talks to: ports 0);
//   both profilers on 127.0.0.1. `--hci-mode` as an ISO installation runs it (its upgrade controllers).
import fsp from 'node:fs/promises';
import fs from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { KubeClient } from '../../src/kube/client.js';
import { Resources, clusterResourceType, resourceType, type KubeObject } from '../../src/kube/resources.js';
import { waitFor } from '../../src/kube/wait.js';
import type { ControlPlane } from '../control-plane/control-plane.js';
import { buildKubeconfig } from '../control-plane/kubeconfig.js';
import { serviceAccountToken } from '../control-plane/service-account-token.js';
import { freePort } from '../control-plane/ports.js';
import { serviceAddress, type ServiceProxy } from '../control-plane/service-proxy.js';
import { startProcess, supervise, type ManagedProcess } from '../control-plane/processes.js';
import { createOrReplace, installEstablished } from '../crds/install.js';
import { installKubeVirtCr } from '../kubevirt/kubevirt-cr.js';
import { ensureHarvesterBuild, type HarvesterBuild } from './binaries.js';
import {
  crdsHarvesterCreated,
  loadStartedState,
  restorable,
  saveStartedState,
  type StartedState,
} from './started-state.js';
import {
  HARVESTER_NAMESPACE,
  HARVESTER_SERVICE_ACCOUNT,
  MUTATING_CONFIG,
  VALIDATING_CONFIG,
  WEBHOOK_SERVICE,
} from './version.js';

export class HarvesterComponentsError extends Error {}

export const WebhookConfigurations = {
  validating: clusterResourceType(
    'admissionregistration.k8s.io',
    'v1',
    'validatingwebhookconfigurations',
    'ValidatingWebhookConfiguration',
  ),
  mutating: clusterResourceType(
    'admissionregistration.k8s.io',
    'v1',
    'mutatingwebhookconfigurations',
    'MutatingWebhookConfiguration',
  ),
} as const;

const SERVICE = resourceType('', 'v1', 'services', 'Service');
const VOLUME_SNAPSHOT_CLASS = clusterResourceType(
  'snapshot.storage.k8s.io',
  'v1',
  'volumesnapshotclasses',
  'VolumeSnapshotClass',
);

export interface WebhookConfiguration extends KubeObject {
  webhooks?: Array<{
    name: string;
    clientConfig: {
      url?: string;
      service?: { namespace: string; name: string; path?: string; port?: number };
      caBundle?: string;
    };
    failurePolicy?: string;
    sideEffects?: string;
    rules?: Array<{ operations: string[]; apiGroups: string[]; apiVersions: string[]; resources: string[] }>;
  }>;
}

/** The chart's webhook Service and port, as the webhook names them in its configurations. */
const WEBHOOK_SERVICE_PORT = { namespace: HARVESTER_NAMESPACE, name: WEBHOOK_SERVICE, port: 443 };

/** The user name both processes act as (RBAC subjects and the webhook's controller-user). */
export const HARVESTER_USER = `system:serviceaccount:${HARVESTER_NAMESPACE}:${HARVESTER_SERVICE_ACCOUNT}`;

/** The token's lifetime: longer than any sandbox here lives (no kubelet refreshes it). */
const TOKEN_SECONDS = 24 * 3600;

/** Where each process spent its start, in milliseconds from start(). */
export interface StartTimes {
  /** Both webhook configurations registered by the webhook and pointed at its port. */
  webhookReadyMs: number;
  /** `harvester` leads (its controllers are being started). */
  harvesterLeadingMs: number;
}

/** KubeVirt's CRDs in the chart: virt-operator's own are installed instead (sandbox/kubevirt). */
const KUBEVIRT_CRD_FILE = /^crd-kubevirt-/;

/**
 * CRDs of Rancher (which runs beside Harvester in every Harvester cluster) that Harvester's
 * webhook caches and nothing here publishes as a file: minimal definitions (group, version, kind,
 * plural, scope; fields kept as sent), as docs/upstream/harvester-own.md#what-it-needs-to-start lists.
 */
interface MinimalCrd {
  group: string;
  version: string;
  kind: string;
  plural: string;
  namespaced: boolean;
}

const MINIMAL_CRDS: MinimalCrd[] = [
  // Rancher's (its management and catalog types; Rancher builds these CRDs in Go).
  {
    group: 'management.cattle.io',
    version: 'v3',
    kind: 'ManagedChart',
    plural: 'managedcharts',
    namespaced: true,
  },
  { group: 'catalog.cattle.io', version: 'v1', kind: 'App', plural: 'apps', namespaced: true },
  {
    group: 'catalog.cattle.io',
    version: 'v1',
    kind: 'ClusterRepo',
    plural: 'clusterrepos',
    namespaced: false,
  },
  // RKE2's helm-controller.
  { group: 'helm.cattle.io', version: 'v1', kind: 'HelmChart', plural: 'helmcharts', namespaced: true },
  {
    group: 'helm.cattle.io',
    version: 'v1',
    kind: 'HelmChartConfig',
    plural: 'helmchartconfigs',
    namespaced: true,
  },
  // CDI (its operator builds these CRDs in Go); not run here. Once the DataVolume CRD exists,
  // KubeVirt's virt-controller also waits for DataSource and CDIConfig to list: all or none.
  { group: 'cdi.kubevirt.io', version: 'v1beta1', kind: 'CDI', plural: 'cdis', namespaced: false },
  {
    group: 'cdi.kubevirt.io',
    version: 'v1beta1',
    kind: 'StorageProfile',
    plural: 'storageprofiles',
    namespaced: false,
  },
  {
    group: 'cdi.kubevirt.io',
    version: 'v1beta1',
    kind: 'DataVolume',
    plural: 'datavolumes',
    namespaced: true,
  },
  {
    group: 'cdi.kubevirt.io',
    version: 'v1beta1',
    kind: 'DataSource',
    plural: 'datasources',
    namespaced: true,
  },
  {
    group: 'cdi.kubevirt.io',
    version: 'v1beta1',
    kind: 'CDIConfig',
    plural: 'cdiconfigs',
    namespaced: false,
  },
];

export function minimalCrd(d: MinimalCrd): KubeObject {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${d.plural}.${d.group}` },
    spec: {
      group: d.group,
      scope: d.namespaced ? 'Namespaced' : 'Cluster',
      names: { kind: d.kind, plural: d.plural, singular: d.kind.toLowerCase(), listKind: `${d.kind}List` },
      versions: [
        {
          name: d.version,
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
        },
      ],
    },
  } as KubeObject;
}

async function crdsIn(dir: string, keep: (file: string) => boolean): Promise<KubeObject[]> {
  const files = (await fsp.readdir(dir)).filter((f) => f.endsWith('.yaml') && keep(f));
  const crds: KubeObject[] = [];
  for (const file of files.sort()) {
    // Longhorn's file is its chart's template: its label lines are Helm includes, left out here.
    const text = (await fsp.readFile(path.join(dir, file), 'utf8'))
      .split('\n')
      .filter((line) => !line.includes('{{'))
      .join('\n');
    for (const doc of parseAllDocuments(text)) {
      const obj = doc.toJS() as KubeObject | null;
      if (obj?.kind === 'CustomResourceDefinition') crds.push(obj);
    }
  }
  return crds;
}

/** Harvester's own CRDs but KubeVirt's, its dependencies' as published, and the minimal ones. */
export async function loadHarvesterCrds(build: HarvesterBuild): Promise<KubeObject[]> {
  return [
    ...(await crdsIn(build.crdDir, (f) => !KUBEVIRT_CRD_FILE.test(f))),
    ...(await crdsIn(build.dependencyCrdDir, () => true)),
    ...MINIMAL_CRDS.map(minimalCrd),
  ];
}

/**
 * One Harvester: `prepare()` builds (or finds) it and picks its ports; `installCrds` runs in the
 * control plane's beforeControllerManager; `start` installs the chart's objects and runs both
 * processes; `stop` ends them and removes their webhook configurations.
 */
export class HarvesterComponents {
  private processes: ManagedProcess[] = [];
  private proxy: ServiceProxy | undefined;
  private identity: { cp: ControlPlane; tokenFile: string } | undefined;
  /** Set by start(). */
  startTimes: StartTimes | undefined;

  private constructor(
    readonly build: HarvesterBuild,
    readonly crds: KubeObject[],
    readonly webhookPort: number,
    /** What an earlier start on this machine left (started-state.ts), restored before this one. */
    readonly restored: StartedState | undefined,
  ) {}

  static async prepare(): Promise<HarvesterComponents> {
    const build = ensureHarvesterBuild();
    const state = await loadStartedState(build.dir, build.version);
    const crds = [...(await loadHarvesterCrds(build)), ...(state?.crds ?? [])];
    return new HarvesterComponents(build, crds, await freePort(), state);
  }

  /** For ControlPlaneOptions.beforeControllerManager. */
  installCrds(admin: KubeClient): Promise<string[]> {
    return installEstablished(admin, this.crds, { timeoutMs: 60_000, existing: 'replace' });
  }

  get logPaths(): string[] {
    return this.processes.map((p) => p.logPath);
  }

  /** Resident memory of each process now (kB, from /proc), for the cost figures. */
  rssKb(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const p of this.processes) {
      try {
        const status = fs.readFileSync(`/proc/${p.child.pid}/status`, 'utf8');
        out[p.name] = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
      } catch {
        out[p.name] = 0;
      }
    }
    return out;
  }

  /** Where kube-apiserver's service proxy sends the chart's webhook Service (443 -> the webhook's port). */
  routeWebhook(proxy: ServiceProxy): void {
    proxy.route(WEBHOOK_SERVICE_PORT, this.webhookPort);
    this.proxy = proxy;
  }

  /** How many connections kube-apiserver opened to the webhook's Service so far (tests). */
  webhookTunnels(): number {
    return this.proxy?.opened.get(serviceAddress(WEBHOOK_SERVICE_PORT)) ?? 0;
  }

  async start(cp: ControlPlane, opts: { readyTimeoutMs?: number } = {}): Promise<void> {
    if (this.processes.length > 0) return;
    const started = Date.now();
    const readyTimeoutMs = opts.readyTimeoutMs ?? 120_000;
    const dir = await fsp.mkdtemp(path.join(cp.dir, 'harvester-'));
    await installChartObjects(cp.admin);
    // Harvester reads the KubeVirt CR at harvester-system/kubevirt (its VM mutator refuses every
    // VM without it); KubeVirt's components here read theirs in `kubevirt` (sandbox/kubevirt): a
    // second copy, which Harvester's kubevirt controller may change without KubeVirt seeing it.
    await installKubeVirtCr(cp.admin, HARVESTER_NAMESPACE);
    if (this.restored) await restoreWebhookState(cp.admin, this.restored);

    // What a pod of the chart has mounted, its service account's token and the cluster's CA, as
    // files: the webhook reads both files its REST config names (pkg/webhook/server/validation.go,
    // pkg/webhook/util/http_client.go) and exits without them.
    const caFile = path.join(dir, 'ca.crt');
    await fsp.writeFile(caFile, cp.caPem);
    const tokenFile = path.join(dir, 'token');
    await fsp.writeFile(
      tokenFile,
      await serviceAccountToken(
        cp.admin,
        { namespace: HARVESTER_NAMESPACE, name: HARVESTER_SERVICE_ACCOUNT },
        TOKEN_SECONDS,
      ),
      { mode: 0o600 },
    );
    const kubeconfig = path.join(dir, 'harvester.kubeconfig');
    await fsp.writeFile(
      kubeconfig,
      buildKubeconfig({ name: cp.name, server: cp.server, caPem: cp.caPem, caFile, user: { tokenFile } }),
      { mode: 0o600 },
    );
    this.identity = { cp, tokenFile };
    const [webhookProfile, harvesterProfile] = [await freePort(), await freePort()];
    const webhook = startProcess(
      'harvester-webhook',
      this.build.webhook,
      [
        `--kubeconfig=${kubeconfig}`,
        `--namespace=${HARVESTER_NAMESPACE}`,
        `--https-port=${this.webhookPort}`,
        `--controller-user=${HARVESTER_USER}`,
        `--profile-listen-address=127.0.0.1:${webhookProfile}`,
      ],
      path.join(dir, 'webhook.log'),
    );
    this.processes.push(webhook);
    // Exits when it loses its leader lease (wrangler's leader election, an apiserver restart):
    // started again, as kubelet would.
    const harvester = supervise(() =>
      startProcess(
        'harvester',
        this.build.harvester,
        [
          `--kubeconfig=${kubeconfig}`,
          `--namespace=${HARVESTER_NAMESPACE}`,
          '--https-port=0',
          '--http-port=0',
          '--hci-mode',
          `--profile-listen-address=127.0.0.1:${harvesterProfile}`,
        ],
        path.join(dir, 'harvester.log'),
      ),
    );
    this.processes.push(harvester);
    try {
      const failed = firstExit([webhook, harvester]);
      await Promise.race([
        failed,
        Promise.all([
          // Its controllers (the Secret one among them) start once its caches have synced.
          untilLogged(webhook, WEBHOOK_CACHES_SYNCED, readyTimeoutMs),
          ...[VALIDATING_CONFIG, MUTATING_CONFIG].map((name, i) =>
            waitFor<WebhookConfiguration>(cp.admin, {
              type: i === 0 ? WebhookConfigurations.validating : WebhookConfigurations.mutating,
              name,
              description: `Harvester's webhook to register ${name}`,
              until: (c) => c !== undefined,
              timeoutMs: readyTimeoutMs,
            }),
          ),
        ]),
      ]);
      const webhookReadyMs = Date.now() - started;
      await Promise.race([
        failed,
        waitFor<KubeObject & { spec?: { holderIdentity?: string } }>(cp.admin, {
          type: Resources.lease,
          namespace: 'kube-system',
          name: 'harvester-controllers',
          description: "Harvester's controllers to take their lease",
          until: (l) => Boolean(l?.spec?.holderIdentity),
          timeoutMs: readyTimeoutMs,
        }),
      ]);
      this.startTimes = { webhookReadyMs, harvesterLeadingMs: Date.now() - started };
      if (!this.restored) await keepStartedState(cp.admin, this.build);
    } catch (err) {
      const tails = this.tail(20);
      await this.stop(cp.admin);
      throw new HarvesterComponentsError(`step 'start Harvester': ${(err as Error).message}\n${tails}`);
    }
  }

  /** A client acting as both processes do (the chart's service account); the caller closes it. */
  async asHarvester(): Promise<KubeClient> {
    if (!this.identity) throw new HarvesterComponentsError('Harvester is not started');
    const { cp, tokenFile } = this.identity;
    const token = (await fsp.readFile(tokenFile, 'utf8')).trim();
    return KubeClient.fromKubeconfig(
      buildKubeconfig({ name: cp.name, server: cp.server, caPem: cp.caPem, user: { token } }),
      { requestTimeoutMs: 10_000 },
    );
  }

  /** Stops both processes (SIGKILL), then removes the webhook configurations they registered. */
  async stop(admin?: KubeClient): Promise<void> {
    const processes = this.processes.splice(0);
    if (processes.length === 0) return;
    await Promise.all(processes.map((p) => p.stop(0)));
    if (!admin) return;
    await admin.delete(WebhookConfigurations.validating, { name: VALIDATING_CONFIG }).catch(() => undefined);
    await admin.delete(WebhookConfigurations.mutating, { name: MUTATING_CONFIG }).catch(() => undefined);
  }

  tail(lines = 10): string {
    return (
      this.processes.map((p) => `${p.name} (${p.logPath}):\n${p.tail(lines)}`).join('\n') || '(not running)'
    );
  }
}

function firstExit(processes: ManagedProcess[]): Promise<never> {
  return Promise.race(
    processes.map((p) =>
      p.exited.then((code) => {
        throw new HarvesterComponentsError(`${p.name} exited (${code}); log ${p.logPath}:\n${p.tail(20)}`);
      }),
    ),
  );
}

/**
 * The chart's namespace, service account and its binding to cluster-admin, and the webhook's
 * Service; Rancher's `cattle-system`, where `harvester` writes a Secret at start (Rancher runs
 * beside Harvester in every Harvester cluster and makes that namespace); and Longhorn's
 * `longhorn-system` (its chart, a dependency of Harvester's, makes it), where Harvester's image
 * controller creates each image's BackingImage.
 */
async function installChartObjects(admin: KubeClient): Promise<void> {
  for (const name of [HARVESTER_NAMESPACE, 'cattle-system', 'longhorn-system'])
    await createOrReplace(admin, Resources.namespace, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name },
    });
  await createOrReplace(admin, Resources.serviceAccount, {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { namespace: HARVESTER_NAMESPACE, name: HARVESTER_SERVICE_ACCOUNT },
  });
  await createOrReplace(admin, Resources.clusterRoleBinding, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'harvester' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
    subjects: [{ kind: 'ServiceAccount', name: HARVESTER_SERVICE_ACCOUNT, namespace: HARVESTER_NAMESPACE }],
  } as KubeObject);
  // The chart's VolumeSnapshotClasses (templates/longhorn-volumesnapshotclass.yaml and its
  // csi-snapshotter sub-chart), which the setting `csi-driver-config` names: `harvester` writes
  // that setting at start and its webhook refuses it while they are missing.
  await createOrReplace(admin, VOLUME_SNAPSHOT_CLASS, {
    apiVersion: 'snapshot.storage.k8s.io/v1',
    kind: 'VolumeSnapshotClass',
    metadata: { name: 'longhorn' },
    driver: 'driver.longhorn.io',
    deletionPolicy: 'Delete',
  } as KubeObject);
  await createOrReplace(admin, VOLUME_SNAPSHOT_CLASS, {
    apiVersion: 'snapshot.storage.k8s.io/v1',
    kind: 'VolumeSnapshotClass',
    metadata: { name: 'longhorn-snapshot' },
    driver: 'driver.longhorn.io',
    deletionPolicy: 'Delete',
    parameters: { type: 'snap' },
  } as KubeObject);
  await createOrReplace(admin, SERVICE, {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { namespace: HARVESTER_NAMESPACE, name: WEBHOOK_SERVICE },
    spec: { ports: [{ name: 'https', port: 443, targetPort: 9443, protocol: 'TCP' }] },
  } as KubeObject);
}

/** The webhook's log line once its caches have synced and its Secret controller runs (pkg/webhook/server/server.go). */
const WEBHOOK_CACHES_SYNCED = 'Sleeping for 15 seconds then applying webhook config';

/** Resolves once the process's log holds `line`; rejects at the deadline with its tail. */
async function untilLogged(proc: ManagedProcess, line: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const text = await fsp.readFile(proc.logPath, 'utf8').catch(() => '');
    if (text.includes(line)) return;
    if (Date.now() > deadline)
      throw new HarvesterComponentsError(
        `${proc.name} did not log "${line}" within ${timeoutMs} ms; log ${proc.logPath}:\n${proc.tail(20)}`,
      );
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The webhook's certificates and configurations from an earlier start, as it left them. */
async function restoreWebhookState(admin: KubeClient, state: StartedState): Promise<void> {
  for (const secret of state.secrets) await createOrReplace(admin, Resources.secret, secret);
  await createOrReplace(admin, WebhookConfigurations.validating, state.validating);
  await createOrReplace(admin, WebhookConfigurations.mutating, state.mutating);
}

/** Keeps what this first start made for the next sandbox (best effort: a failure only costs time). */
async function keepStartedState(admin: KubeClient, build: HarvesterBuild): Promise<void> {
  try {
    const crds = await admin.list<KubeObject>(
      clusterResourceType(
        'apiextensions.k8s.io',
        'v1',
        'customresourcedefinitions',
        'CustomResourceDefinition',
      ),
    );
    const secrets = await Promise.all(
      ['harvester-webhook-ca', 'harvester-webhook-tls'].map((name) =>
        admin.get<KubeObject>(Resources.secret, { namespace: HARVESTER_NAMESPACE, name }),
      ),
    );
    const validating = await admin.get<KubeObject>(WebhookConfigurations.validating, {
      name: VALIDATING_CONFIG,
    });
    const mutating = await admin.get<KubeObject>(WebhookConfigurations.mutating, { name: MUTATING_CONFIG });
    await saveStartedState(build.dir, {
      version: build.version,
      crds: crdsHarvesterCreated(crds.items),
      secrets: secrets.map(restorable),
      validating: restorable(validating),
      mutating: restorable(mutating),
    });
  } catch {
    // The next sandbox starts as this one did.
  }
}
