// What the Harvester CSI driver (harvester-csi-driver 97b6c358) does for a guest cluster's
// volumes (docs/upstream/harvester-kubevirt.md#guest-cluster-volumes): CreateVolume makes a
// host PVC named as the CSI volume, `pvc-<guest PVC UID>` (RWX, Block, at least 10 MiB,
// rounded up to 2 MiB), in its kubeconfig's namespace and with no label (the released driver
// sets none), then the guest's external-provisioner makes the PersistentVolume naming it
// (`spec.csi.volumeHandle`) in the guest's own apiserver and the guest's PV controller binds
// the claim; ControllerPublish/Unpublish hot-plug it into the guest's VM with JSON patches on
// the VM spec pinned to the resourceVersion read (declarative hot-plug, Harvester >= 1.8).
// The host PVC carries what the released driver writes and nothing more (checked against
// docs/upstream/harvester-kubevirt.md#what-the-csi-driver-writes-on-a-host-volume, on which the
// controller's ownership evidence rests): the volume's name, ReadWriteMany, Block for a
// single-node claim, no label, owner, annotation or source; the guest PV is named as the volume.
import crypto from 'node:crypto';
import type { KubeClient } from '../../../src/kube/client.js';
import { Resources, type KubeObject } from '../../../src/kube/resources.js';
import { HARVESTER_CSI_DRIVER } from '../../../src/harvester/guest-volumes.js';
import type { PersistentVolume } from '../../../src/api/core.js';
import { formatBinaryQuantity, parseQuantity } from '../quantity.js';
import type { PersistentVolumeClaim, VirtualMachine } from '../types.js';
import { isStalePatch } from '../writes.js';

const MIB = 1024n * 1024n;
const MINIMAL_VOLUME_SIZE = 10n * MIB;
/**
 * A lost race is retried, as the external-attacher requeues a failed ControllerPublish with
 * exponential backoff: 20 ms doubling to 1 s, for up to 15 s in all (a VM whose status the
 * KubeVirt controller is writing at the same time can lose several races in a row on a loaded
 * machine; retrying at once, five times, lost them all within milliseconds).
 */
const RETRY_FIRST_MS = 20;
const RETRY_MAX_MS = 1_000;
const RETRY_FOR_MS = 15_000;

export interface CreateVolumeRequest {
  /** The host PVC's namespace: the CSI driver's kubeconfig's (the guest's VMs' namespace). */
  namespace: string;
  /** Bytes, or a quantity such as "1Gi". */
  size: number | bigint | string;
  /**
   * The guest cluster's apiserver: its PVC (`claim`, default default/data-<random>) and the
   * PersistentVolume naming the host volume are made there. Without it only the host side.
   */
  guest?: KubeClient;
  claim?: { namespace: string; name: string };
}

export interface CreatedVolume {
  /** The host PVC (= the CSI volume id, = the guest PV's name). */
  hostPvc: string;
  /** With a guest: its PVC and PV. */
  guestClaim?: { namespace: string; name: string };
  guestPv?: string;
}

export interface HotplugRequest {
  namespace: string;
  vmName: string;
  pvcName: string;
}

export interface CsiStandIn {
  /** Resolves with the host PVC's name. */
  createVolume(req: CreateVolumeRequest): Promise<string>;
  /** The same, with the guest's objects named. */
  provision(req: CreateVolumeRequest): Promise<CreatedVolume>;
  hotplug(req: HotplugRequest): Promise<void>;
  unplug(req: HotplugRequest): Promise<void>;
}

/** The size the driver asks for: the minimum, then rounded up to a multiple of 2 MiB. */
export function hostVolumeSize(size: number | bigint | string): bigint {
  let bytes = typeof size === 'string' ? parseQuantity(size) : BigInt(size);
  if (bytes < MINIMAL_VOLUME_SIZE) bytes = MINIMAL_VOLUME_SIZE;
  const unit = 2n * MIB;
  return ((bytes + unit - 1n) / unit) * unit;
}

export function csiStandIn(client: KubeClient): CsiStandIn {
  /** GET, build a patch from what was read, PATCH; a lost race reads again (the attacher retries). */
  async function patchVm(
    req: HotplugRequest,
    build: (vm: VirtualMachine) => Array<Record<string, unknown>> | undefined,
  ): Promise<void> {
    const giveUpAt = Date.now() + RETRY_FOR_MS;
    for (let pause = RETRY_FIRST_MS; ; pause = Math.min(pause * 2, RETRY_MAX_MS)) {
      const vm = await client.get<VirtualMachine>(Resources.virtualMachine, {
        namespace: req.namespace,
        name: req.vmName,
      });
      const ops = build(vm);
      if (!ops) return;
      try {
        await client.patch(
          Resources.virtualMachine,
          { namespace: req.namespace, name: req.vmName },
          [{ op: 'test', path: '/metadata/resourceVersion', value: vm.metadata.resourceVersion }, ...ops],
          'json',
        );
        return;
      } catch (err) {
        if (!isStalePatch(err) || Date.now() + pause > giveUpAt) throw err;
      }
      await new Promise((resolve) => setTimeout(resolve, pause * (0.5 + Math.random() / 2)));
    }
  }

  async function provision(req: CreateVolumeRequest): Promise<CreatedVolume> {
    const size = formatBinaryQuantity(hostVolumeSize(req.size));
    const claim = req.guest ? await guestClaim(req.guest, req) : undefined;
    const name = `pvc-${claim?.metadata.uid ?? crypto.randomUUID()}`;
    await client.create<PersistentVolumeClaim>(Resources.pvc, {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name, namespace: req.namespace },
      spec: {
        accessModes: ['ReadWriteMany'],
        volumeMode: 'Block',
        resources: { requests: { storage: size } },
      },
    });
    if (!req.guest || !claim) return { hostPvc: name };
    await bindGuestVolume(req.guest, claim, name, size);
    return {
      hostPvc: name,
      guestClaim: { namespace: claim.metadata.namespace ?? '', name: claim.metadata.name },
      guestPv: name,
    };
  }

  return {
    async createVolume(req) {
      return (await provision(req)).hostPvc;
    },
    provision,

    hotplug(req) {
      return patchVm(req, (vm) => {
        const spec = vm.spec.template.spec;
        const hasVolume = (spec.volumes ?? []).some((v) => v.name === req.pvcName);
        const hasDisk = (spec.domain.devices?.disks ?? []).some((d) => d.name === req.pvcName);
        if (hasVolume && hasDisk) return undefined;
        const ops: Array<Record<string, unknown>> = [];
        if (!hasVolume) {
          ops.push({
            op: 'add',
            path: '/spec/template/spec/volumes/-',
            value: {
              name: req.pvcName,
              persistentVolumeClaim: { claimName: req.pvcName, hotpluggable: true },
            },
          });
        }
        if (!hasDisk) {
          // KubeVirt hot-plugs disks on the SCSI bus only.
          ops.push({
            op: 'add',
            path: '/spec/template/spec/domain/devices/disks/-',
            value: { name: req.pvcName, disk: { bus: 'scsi' } },
          });
        }
        return ops;
      });
    },

    unplug(req) {
      return patchVm(req, (vm) => {
        const spec = vm.spec.template.spec;
        return [
          {
            op: 'replace',
            path: '/spec/template/spec/volumes',
            value: (spec.volumes ?? []).filter((v) => v.name !== req.pvcName),
          },
          {
            op: 'replace',
            path: '/spec/template/spec/domain/devices/disks',
            value: (spec.domain.devices?.disks ?? []).filter((d) => d.name !== req.pvcName),
          },
        ];
      });
    },
  };
}

/** The workload's claim in the guest cluster, on the Harvester storage class. */
function guestClaim(guest: KubeClient, req: CreateVolumeRequest): Promise<PersistentVolumeClaim> {
  const at = req.claim ?? { namespace: 'default', name: `data-${crypto.randomBytes(3).toString('hex')}` };
  return guest.create<PersistentVolumeClaim>(Resources.pvc, {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      ...at,
      annotations: { 'volume.kubernetes.io/storage-provisioner': HARVESTER_CSI_DRIVER },
    },
    spec: {
      accessModes: ['ReadWriteOnce'],
      storageClassName: GUEST_STORAGE_CLASS,
      resources: { requests: { storage: formatBinaryQuantity(parseSize(req.size)) } },
    },
  });
}

/** The storage class Rancher's harvester-csi-driver chart makes in a guest cluster. */
const GUEST_STORAGE_CLASS = 'harvester';

const parseSize = (size: number | bigint | string): bigint =>
  typeof size === 'string' ? parseQuantity(size) : BigInt(size);

/**
 * The guest's external-provisioner makes the PV (named as the volume, its handle the host PVC),
 * then its PV controller binds the claim to it (the sandbox's guest runs no controller manager).
 */
async function bindGuestVolume(
  guest: KubeClient,
  claim: PersistentVolumeClaim,
  name: string,
  size: string,
): Promise<void> {
  const claimAt = { namespace: claim.metadata.namespace ?? '', name: claim.metadata.name };
  await guest.create<PersistentVolume>(Resources.persistentVolume, {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name, annotations: { 'pv.kubernetes.io/provisioned-by': HARVESTER_CSI_DRIVER } },
    spec: {
      csi: { driver: HARVESTER_CSI_DRIVER, volumeHandle: name, fsType: 'ext4' },
      claimRef: {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        ...claimAt,
        uid: claim.metadata.uid ?? '',
      },
      capacity: { storage: size },
      accessModes: ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: 'Delete',
      storageClassName: GUEST_STORAGE_CLASS,
      volumeMode: 'Filesystem',
    },
  });
  await guest.patch(
    Resources.persistentVolume,
    { name, subresource: 'status' },
    { status: { phase: 'Bound' } },
  );
  await guest.patch<KubeObject>(Resources.pvc, claimAt, {
    metadata: {
      annotations: {
        'pv.kubernetes.io/bind-completed': 'yes',
        'pv.kubernetes.io/bound-by-controller': 'yes',
      },
    },
    spec: { volumeName: name },
  });
  await guest.patch(
    Resources.pvc,
    { ...claimAt, subresource: 'status' },
    { status: { phase: 'Bound', capacity: { storage: size }, accessModes: ['ReadWriteOnce'] } },
  );
}
