// What the Harvester CSI driver (harvester-csi-driver 97b6c358) does on the Harvester
// side for a guest cluster's volumes: CreateVolume makes a host PVC `pvc-<guest PVC UID>`
// (RWX, Block, at least 10 MiB, rounded up to 2 MiB); ControllerPublish/Unpublish hot-plug
// it into the guest's VM with JSON patches on the VM spec pinned to the resourceVersion
// read (declarative hot-plug, Harvester >= 1.8).
import crypto from 'node:crypto';
import type { KubeClient } from '../../../src/kube/client.js';
import { Resources } from '../../../src/kube/resources.js';
import { Labels } from '../names.js';
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
  namespace: string;
  /** Sets guestcluster.harvesterhci.io/name, as only the unmerged harvester-csi-driver#65 does. */
  guestCluster?: string;
  /** Bytes, or a quantity such as "1Gi". */
  size: number | bigint | string;
}

export interface HotplugRequest {
  namespace: string;
  vmName: string;
  pvcName: string;
}

export interface CsiStandIn {
  createVolume(req: CreateVolumeRequest): Promise<string>;
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

  return {
    async createVolume(req) {
      const name = `pvc-${crypto.randomUUID()}`;
      await client.create<PersistentVolumeClaim>(Resources.pvc, {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: {
          name,
          namespace: req.namespace,
          ...(req.guestCluster !== undefined ? { labels: { [Labels.guestCluster]: req.guestCluster } } : {}),
        },
        spec: {
          accessModes: ['ReadWriteMany'],
          volumeMode: 'Block',
          resources: { requests: { storage: formatBinaryQuantity(hostVolumeSize(req.size)) } },
        },
      });
      return name;
    },

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
