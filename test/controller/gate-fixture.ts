// The world of the controller's integration tests: a Rancher control plane (CAPI,
// provisioning and rke-machine kinds) with the CAPI stand-in, a Harvester control plane,
// Harvester users whose bootstrap tokens expire when told, cloud credentials for them, and
// the controller itself, started through main.ts's run() as a user bound to exactly the
// chart's RBAC. Everything is stopped after the file's tests.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';
import { ANNOTATION_REMOVE_ALL_PVCS } from '../../src/harvester/labels.js';
import { KubeClient } from '../../src/kube/client.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { waitFor } from '../../src/kube/wait.js';
import { createLogger } from '../../src/log/logger.js';
import { parseConfig } from '../../src/controller/config.js';
import { run, type Running } from '../../src/controller/main.js';
import { rancherInstanceName } from '../../src/rancher/names.js';
import { createTokenUser, tokenKubeconfig, type TokenUser } from '../../sandbox/control-plane/access.js';
import { startControlPlane, type ControlPlane } from '../../sandbox/control-plane/control-plane.js';
import { installCrds } from '../../sandbox/crds/install.js';
import { startCapiStandIn, type CapiStandIn, type RemovalJob } from '../../sandbox/rancher/capi-standin.js';
import { harvesterCloudCredential, saveHarvesterCloudCredential } from '../../sandbox/rancher/credentials.js';
import { bindChartRbac } from './chart-rbac.js';

export const NS = 'fleet-test';
export const VM_NS = 'vms';
export const SYSTEM_NS = 'hm-system';
export const HARVESTER_ID = 'c-m-harv1';

export interface RemovalObservation {
  machine: string;
  /** The VM's removeAllPersistentVolumeClaims annotation when the job started. */
  annotation: string | undefined;
  vmFound: boolean;
  kubeconfigUser: string | undefined;
}

export interface GateWorld {
  rancher: ControlPlane;
  harvester: ControlPlane;
  controller: Running;
  standIn: CapiStandIn;
  observations: RemovalObservation[];
  logLines: string[];
  /** A Harvester user allowed to read and change VMs, and its kubeconfig. */
  harvesterUser(name: string, expiresAt: Date): Promise<{ user: TokenUser; kubeconfig: string }>;
  saveCredential(name: string, kubeconfig: string, expiresAt?: Date): Promise<void>;
  waitGone(type: typeof Resources.provisioningCluster, name: string, timeoutMs?: number): Promise<void>;
  events(
    reason: string,
  ): Promise<Array<KubeObject & { message?: string; involvedObject?: { name?: string; kind?: string } }>>;
}

const VM_RULES = [
  {
    apiGroups: ['kubevirt.io'],
    resources: ['virtualmachines'],
    verbs: ['get', 'list', 'patch', 'update', 'delete'],
  },
];

/**
 * The controller as the chart runs it: main.ts's run(), leader election on, a kubeconfig
 * file for a Rancher user bound to exactly the chart's RBAC, JSON logs captured.
 */
export async function startControllerAsChart(
  rancher: ControlPlane,
  opts: { namespace: string; systemNamespace: string; gateDeadline: string },
): Promise<{ controller: Running; logLines: string[]; stop: () => Promise<void> }> {
  const controllerUser = await createTokenUser(rancher.admin, {
    expiresAt: new Date(Date.now() + 86_400_000),
  });
  await bindChartRbac(rancher.admin, controllerUser.username, {
    watchNamespaces: [opts.namespace],
    credentialNamespace: 'cattle-global-data',
    systemNamespace: opts.systemNamespace,
  });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-controller-'));
  const kubeconfigPath = path.join(dir, 'kubeconfig');
  fs.writeFileSync(
    kubeconfigPath,
    tokenKubeconfig({
      name: 'rancher',
      server: rancher.server,
      caPem: rancher.caPem,
      token: controllerUser.token,
    }),
    { mode: 0o600 },
  );
  const logLines: string[] = [];
  const logger = createLogger({
    format: 'json',
    level: 'debug',
    sink: { write: (_l, line) => logLines.push(line) },
  });
  const config = parseConfig(
    [
      '--kubeconfig',
      kubeconfigPath,
      '--namespace',
      opts.namespace,
      '--leader-election-namespace',
      opts.systemNamespace,
      '--metrics-bind-address',
      '127.0.0.1:0',
      '--gate-deadline',
      opts.gateDeadline,
      '--probe-interval',
      '1m',
    ],
    { POD_NAME: 'hm-test-0' },
  );
  const controller = await run(config, logger, {});
  return {
    controller,
    logLines,
    stop: async () => {
      await controller.shutdown();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export function useGateWorld(opts: { gateDeadline?: string } = {}): { readonly world: GateWorld } {
  let world: GateWorld | undefined;
  const cleanups: Array<() => Promise<void>> = [];
  before(async () => {
    const [rancher, harvester] = await Promise.all([
      startControlPlane({ name: 'rancher' }),
      startControlPlane({ name: 'harvester', controllerManager: false }),
    ]);
    cleanups.push(
      () => rancher.stop(),
      () => harvester.stop(),
    );
    await Promise.all([installCrds(rancher.admin, 'rancher'), installCrds(harvester.admin, 'harvester')]);
    for (const name of [NS, SYSTEM_NS])
      await rancher.admin.create(Resources.namespace, {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name },
      });
    await harvester.admin.create(Resources.namespace, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: VM_NS },
    });
    await saveHarvesterCloudCredential(
      rancher.admin,
      harvesterCloudCredential({
        name: 'cc-bootstrap',
        kubeconfig: 'apiVersion: v1\nkind: Config\n',
        clusterId: HARVESTER_ID,
      }),
    );

    const observations: RemovalObservation[] = [];
    // Rancher's rm Job, played by a job that looks at the VM with the credential it was
    // given (proving that credential works), records what it saw, and deletes the VM.
    const removalJob: RemovalJob = async ({ harvesterMachine, env }) => {
      const kubeconfig = env.HARVESTER_KUBECONFIG_CONTENT ?? '';
      const client = KubeClient.fromKubeconfig(kubeconfig, {
        retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 },
      });
      try {
        const at = {
          namespace: harvesterMachine.spec?.vmNamespace ?? '',
          name: rancherInstanceName(harvesterMachine.metadata.name ?? ''),
        };
        const vm = await client.find<KubeObject>(Resources.virtualMachine, at);
        observations.push({
          machine: harvesterMachine.metadata.name ?? '',
          annotation: vm?.metadata.annotations?.[ANNOTATION_REMOVE_ALL_PVCS],
          vmFound: vm !== undefined,
          kubeconfigUser: client.credential.identity,
        });
        if (vm) await client.delete(Resources.virtualMachine, at);
      } finally {
        client.close();
      }
    };
    const standIn = await startCapiStandIn(rancher.admin, { namespace: NS, removalJob, retryDelayMs: 300 });
    cleanups.unshift(() => standIn.stop());

    const { controller, logLines, stop } = await startControllerAsChart(rancher, {
      namespace: NS,
      systemNamespace: SYSTEM_NS,
      gateDeadline: opts.gateDeadline ?? '10m',
    });
    cleanups.unshift(stop);

    world = {
      rancher,
      harvester,
      controller,
      standIn,
      observations,
      logLines,
      async harvesterUser(name, expiresAt) {
        const user = await createTokenUser(harvester.admin, { expiresAt, rules: VM_RULES });
        return {
          user,
          kubeconfig: tokenKubeconfig({
            name,
            server: harvester.server,
            caPem: harvester.caPem,
            token: user.token,
          }),
        };
      },
      async saveCredential(name, kubeconfig, expiresAt) {
        await saveHarvesterCloudCredential(
          rancher.admin,
          harvesterCloudCredential({
            name,
            kubeconfig,
            clusterId: HARVESTER_ID,
            ...(expiresAt ? { expiresAt } : {}),
          }),
        );
      },
      async waitGone(type, name, timeoutMs = 60_000) {
        await waitFor(rancher.admin, {
          type,
          namespace: NS,
          name,
          timeoutMs,
          description: `${type.kind} ${NS}/${name} to be deleted`,
          until: (o) => o === undefined,
        });
      },
      async events(reason) {
        const list = await rancher.admin.list<KubeObject & { message?: string }>(Resources.event, {
          fieldSelector: `reason=${reason}`,
        });
        return list.items;
      },
    };
  });
  after(async () => {
    for (const c of cleanups) await c().catch(() => undefined);
  });
  return {
    get world(): GateWorld {
      if (!world) throw new Error('the world is not started yet');
      return world;
    },
  };
}
