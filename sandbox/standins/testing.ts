// Test helpers for the stand-ins: running them beside a real control plane, VMs shaped
// like the Go driver's, and watch-based waits that say what they waited for.
import { after, before } from 'node:test';
import { keyText } from '../../src/api/object-key.js';
import { KubeClient } from '../../src/kube/client.js';
import { Resources, type KubeObject, type ResourceType } from '../../src/kube/resources.js';
import { waitFor } from '../../src/kube/wait.js';
import { createLogger } from '../../src/log/logger.js';
import { createNamespace } from '../control-plane/access.js';
import type { ControlPlaneFixture } from '../../test/support/control-plane-fixture.js';
import type { ControlPlane } from '../control-plane/control-plane.js';
import { startHarvester, type HarvesterControlPlane } from '../harvester.js';
import { seedNetworks } from '../sandbox-seeds.js';
import { startStandIns, type StandInOptions, type StandIns } from './index.js';
import { Annotations } from './names.js';
import type { VirtualMachine, VirtualMachineImage } from './types.js';

/** Short delays: tests prove order and effect, not wall-clock realism. */
export const FAST = { podStartMs: 50, scheduledMs: 100, guestAgentMs: 300, shutdownMs: 100 };

export interface StandInsFixture {
  readonly standIns: StandIns;
  /** A client with retries (the fixture's admin client makes one attempt only). */
  readonly client: KubeClient;
}

/** Starts the stand-ins before the tests of the enclosing suite, stops them after. */
export function useStandIns(fixture: ControlPlaneFixture, options: StandInOptions = {}): StandInsFixture {
  let standIns: StandIns | undefined;
  let client: KubeClient | undefined;
  before(async () => {
    client = KubeClient.fromKubeconfig(fixture.cp.adminKubeconfig, { requestTimeoutMs: 10_000 });
    const logger = process.env.STANDINS_LOG ? createLogger({ level: 'debug', format: 'json' }) : undefined;
    standIns = await startStandIns(client, { delays: FAST, ...(logger ? { logger } : {}), ...options });
  });
  after(async () => {
    await standIns?.stop();
    client?.close();
  });
  return {
    get standIns(): StandIns {
      if (!standIns) throw new Error('stand-ins not started (use them inside a test)');
      return standIns;
    },
    get client(): KubeClient {
      if (!client) throw new Error('stand-ins not started (use them inside a test)');
      return client;
    },
  };
}

export interface HarvesterFixture extends StandInsFixture {
  readonly cp: ControlPlane;
  readonly harvester: HarvesterControlPlane;
}

let sharedHarvester: HarvesterFixture | undefined;

/**
 * One Harvester for every useHarvester() of this process (test/shared-sandbox/: several test
 * files one after another, ADR 0031): to be called at the top level of a module imported before
 * them, so that its hooks belong to the whole process.
 */
export function shareOneHarvester(): void {
  if (sharedHarvester) throw new Error('this process shares one Harvester already');
  sharedHarvester = harvesterAround({ name: 'shared-harvester' });
}

/**
 * Harvester's control plane with Harvester's own webhook and controllers, KubeVirt's own virt-api
 * and virt-controller, and the stand-ins, once for the tests of the enclosing file or suite; in a
 * process that shares one (shareOneHarvester), that one. `name` names the control plane only.
 */
export function useHarvester(options: StandInOptions & { name?: string } = {}): HarvesterFixture {
  if (sharedHarvester) {
    const { name: _name, ...own } = options;
    if (Object.keys(own).length > 0)
      throw new Error(
        `a test file sharing its process's Harvester asked for stand-in options of its own (${Object.keys(own).join(', ')}): run it by itself`,
      );
    return sharedHarvester;
  }
  return harvesterAround(options);
}

function harvesterAround(options: StandInOptions & { name?: string }): HarvesterFixture {
  let harvester: HarvesterControlPlane | undefined;
  let standIns: StandIns | undefined;
  let client: KubeClient | undefined;
  const { name, ...standInOptions } = options;
  before(async () => {
    harvester = await startHarvester({ name: name ?? 'harvester' });
    client = KubeClient.fromKubeconfig(harvester.cp.adminKubeconfig, { requestTimeoutMs: 10_000 });
    await seedNetworks(client);
    const logger = process.env.STANDINS_LOG ? createLogger({ level: 'debug', format: 'json' }) : undefined;
    standIns = await startStandIns(client, {
      delays: FAST,
      ...(logger ? { logger } : {}),
      virtHandlerClient: harvester.virtHandlerClient,
      longhornWebhook: harvester.webhookServing,
      ...standInOptions,
    });
  });
  after(async () => {
    await standIns?.stop();
    client?.close();
    await harvester?.stop();
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('Harvester not started (use it inside a test)');
    return value;
  };
  return {
    get cp() {
      return started(harvester).cp;
    },
    get harvester() {
      return started(harvester);
    },
    get standIns() {
      return started(standIns);
    },
    get client() {
      return started(client);
    },
  };
}

const gcProbes = new Map<string, Promise<void>>();

/**
 * kube-controller-manager's garbage collector learns about new CRDs at its next discovery
 * pass (every 30 s); until then a Foreground deletion of a VM waits. Resolves once a
 * probe VM deleted in the foreground is gone. Memoized per apiserver.
 */
export function garbageCollectorKnowsVms(client: KubeClient): Promise<void> {
  let probe = gcProbes.get(client.server);
  if (!probe) {
    probe = (async () => {
      const namespace = await createNamespace(client, 'gc-probe');
      await client.create(Resources.virtualMachine, driverVm(namespace, 'probe', { runStrategy: 'Halted' }));
      await client.delete(
        Resources.virtualMachine,
        { namespace, name: 'probe' },
        { propagationPolicy: 'Foreground' },
      );
      await waitUntil(
        client,
        Resources.virtualMachine,
        { namespace, name: 'probe' },
        'the garbage collector to watch VMs',
        gone,
        60_000,
      );
    })();
    gcProbes.set(client.server, probe);
  }
  return probe;
}

export function waitUntil<T extends KubeObject>(
  client: KubeClient,
  type: ResourceType,
  at: { namespace?: string; name: string },
  description: string,
  until: (obj: T | undefined) => boolean,
  timeoutMs = 20_000,
): Promise<T | undefined> {
  return waitFor<T>(client, {
    type,
    ...(at.namespace !== undefined ? { namespace: at.namespace } : {}),
    name: at.name,
    description,
    until,
    timeoutMs,
    describeState: (o) => {
      if (!o) return 'absent';
      const { managedFields: _noise, ...metadata } = o.metadata as KubeObject['metadata'] & {
        managedFields?: unknown;
      };
      return JSON.stringify({ metadata, status: (o as { status?: unknown }).status });
    },
  });
}

export const gone = (o: unknown): boolean => o === undefined;

export interface PvcTemplate {
  name: string;
  storage: string;
  storageClassName?: string;
  imageId?: string;
}

export function pvcTemplate(t: PvcTemplate): Record<string, unknown> {
  return {
    metadata: { name: t.name, ...(t.imageId ? { annotations: { [Annotations.imageId]: t.imageId } } : {}) },
    spec: {
      accessModes: ['ReadWriteMany'],
      resources: { requests: { storage: t.storage } },
      volumeMode: 'Block',
      ...(t.storageClassName ? { storageClassName: t.storageClassName } : {}),
    },
  };
}

/** A VM as the Go driver builds it (docs/upstream/harvester-kubevirt.md#the-drivers-vm), trimmed down. */
export function driverVm(
  namespace: string,
  name: string,
  opts: {
    disks?: PvcTemplate[];
    runStrategy?: VirtualMachine['spec']['runStrategy'];
    annotations?: Record<string, string>;
  } = {},
): VirtualMachine {
  const disks = opts.disks ?? [];
  const labels = {
    'harvesterhci.io/creator': 'docker-machine-driver-harvester',
    'harvesterhci.io/vmName': name,
    'harvesterhci.io/machineSetName': `${namespace}-pool`,
  };
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachine',
    metadata: {
      name,
      namespace,
      labels,
      annotations: {
        ...(disks.length > 0
          ? { [Annotations.volumeClaimTemplates]: JSON.stringify(disks.map(pvcTemplate)) }
          : {}),
        ...opts.annotations,
      },
    },
    spec: {
      runStrategy: opts.runStrategy ?? 'RerunOnFailure',
      template: {
        metadata: {
          labels,
          annotations: {
            'harvesterhci.io/sshNames': '[]',
            'harvesterhci.io/waitForLeaseInterfaceNames': '[]',
          },
        },
        spec: {
          evictionStrategy: 'LiveMigrateIfPossible',
          domain: {
            cpu: { cores: 1, sockets: 1, threads: 1 },
            resources: { limits: { cpu: '1', memory: '1Gi' } },
            devices: {
              disks: [
                { name: 'cloudinitdisk', disk: { bus: 'virtio' } },
                ...disks.map((d, i) => ({ name: `disk-${i}`, bootOrder: i + 1, disk: { bus: 'virtio' } })),
              ],
              interfaces: [{ name: 'nic-0', model: 'virtio', bridge: {} }],
            },
          },
          networks: [{ name: 'nic-0', multus: { networkName: 'default/vlan1' } }],
          volumes: [
            { name: 'cloudinitdisk', cloudInitNoCloud: { userData: '#cloud-config\n' } },
            ...disks.map((d, i) => ({ name: `disk-${i}`, persistentVolumeClaim: { claimName: d.name } })),
          ],
        },
      },
    },
  };
}

/** An imported image, waited for until Harvester recorded its StorageClass. */
export async function importedImage(
  client: KubeClient,
  namespace: string,
  name: string,
): Promise<VirtualMachineImage> {
  await client.create<VirtualMachineImage>(Resources.virtualMachineImage, {
    apiVersion: 'harvesterhci.io/v1beta1',
    kind: 'VirtualMachineImage',
    metadata: { name, namespace },
    spec: { displayName: `${name}.qcow2`, sourceType: 'download', url: 'http://images.invalid/focal.img' },
  });
  const image = await waitUntil<VirtualMachineImage>(
    client,
    Resources.virtualMachineImage,
    { namespace, name },
    `image ${keyText(namespace, name)} to be imported`,
    (o) => o?.status?.conditions?.some((c) => c.type === 'Imported' && c.status === 'True') ?? false,
  );
  if (!image) throw new Error('unreachable: image wait resolved without the image');
  return image;
}
