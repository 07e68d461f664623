// Harvester's VM controller (pkg/controller/master/virtualmachine, v1.8.0), the parts the
// driver depends on: PVCs from the volumeClaimTemplates annotation, the run-strategy
// annotation, VM template labels synced to the VMI, and the OnRemove handler
// "VMController.CleanupPVCAndSnapshot" that deletes the PVCs named in
// removedPersistentVolumeClaims before its finalizer goes.
// Like wrangler's handlers it reacts to VM events only: a missing image or PVC is not
// watched for; the VM is looked at again on its next change.
import { formatKey, keyOf, objectKey, parseKey, type ObjectKey } from '../../../src/api/object-key.js';
import type { KubeClient } from '../../../src/kube/client.js';
import type { Logger } from '../../../src/log/logger.js';
import type { Controller } from '../../../src/kube/manager.js';
import { Resources } from '../../../src/kube/resources.js';
import type { StandInContext } from '../context.js';
import { Annotations, Finalizers, Labels } from '../names.js';
import { compareQuantities } from '../quantity.js';
import { runStrategyOf } from './run-strategy.js';
import type {
  PersistentVolumeClaim,
  VirtualMachine,
  VirtualMachineImage,
  VirtualMachineInstance,
} from '../types.js';
import { reconcileFinalizer, type FinalizerStep } from '../finalizer.js';
import { mergePatchWithRetry, refOf, updateWithRetry } from '../writes.js';

/**
 * Why a claim template waits (its image not created yet) or is skipped (a CDI-backed image,
 * not played), as Harvester logs it; undefined when the PVC may be made.
 */
export function imageSkip(
  template: PersistentVolumeClaim,
  imageOf: (key: ObjectKey) => VirtualMachineImage | undefined,
): { message: string; fields: Record<string, string> } | undefined {
  const imageId = template.metadata.annotations?.[Annotations.imageId];
  if (imageId === undefined || imageId.split('/').length !== 2) return undefined;
  const image = imageOf(parseKey(imageId));
  if (!image)
    return {
      message: 'The corresponding VMImage is not created yet; skipping this PVC',
      fields: { pvc: template.metadata.name, imageId },
    };
  if (image.spec.backend === 'cdi')
    return {
      message: 'images with the CDI backend (DataVolumes) are not played by the sandbox',
      fields: { imageId },
    };
  return undefined;
}

/** Harvester gives up quietly on this error prefix when growing a PVC. */
const PVC_EXPAND_ERROR_PREFIX = 'PVC_EXPAND';

// Users may resize volumes elsewhere: only a larger request in the template is applied.
async function growPvc(
  client: KubeClient,
  logger: Logger,
  existing: PersistentVolumeClaim,
  template: PersistentVolumeClaim,
): Promise<void> {
  const wanted = template.spec.resources?.requests?.storage ?? '0';
  try {
    await updateWithRetry(client, Resources.pvc, existing, refOf(existing), (pvc) => {
      if (compareQuantities(wanted, pvc.spec.resources?.requests?.storage ?? '0') <= 0) return undefined;
      pvc.spec.resources = { ...pvc.spec.resources, requests: { ...template.spec.resources?.requests } };
      return pvc;
    });
  } catch (err) {
    if (err instanceof Error && err.message.includes(PVC_EXPAND_ERROR_PREFIX)) {
      logger.warn('in VM controller, PVC expand error', { error: err.message });
      return;
    }
    throw err;
  }
}

export function harvesterVmController(ctx: StandInContext): Controller {
  const { client } = ctx;
  const vms = ctx.manager.cache<VirtualMachine>({ type: Resources.virtualMachine });
  const pvcs = ctx.manager.cache<PersistentVolumeClaim>({ type: Resources.pvc });
  const images = ctx.manager.cache<VirtualMachineImage>({ type: Resources.virtualMachineImage });
  const vmis = ctx.manager.cache<VirtualMachineInstance>({ type: Resources.virtualMachineInstance });
  const logger = ctx.logger.child({ controller: 'harvester-vm' });

  async function createPvcsFromAnnotation(vm: VirtualMachine): Promise<void> {
    const raw = vm.metadata.annotations?.[Annotations.volumeClaimTemplates];
    if (!raw) return;
    const namespace = vm.metadata.namespace ?? '';
    for (const template of parseTemplates(raw)) {
      const name = template.metadata.name;
      const skip = imageSkip(template, (key) => images.get(key));
      if (skip) {
        logger.warn(skip.message, skip.fields);
        continue;
      }
      const existing = pvcs.get(objectKey(namespace, name));
      if (!existing) {
        await client.create<PersistentVolumeClaim>(Resources.pvc, {
          ...template,
          apiVersion: 'v1',
          kind: 'PersistentVolumeClaim',
          metadata: { ...template.metadata, namespace },
        });
        continue;
      }
      await growPvc(client, logger, existing, template);
    }
  }

  // A workaround Harvester keeps for kubevirt#7295: remember the strategy before a stop.
  async function storeRunStrategy(vm: VirtualMachine): Promise<void> {
    const strategy = runStrategyOf(vm);
    if (strategy === undefined) {
      logger.warn('Skip store run strategy to the annotation: running and runStrategy are both set', {
        vm: formatKey(keyOf(vm)),
      });
      return;
    }
    if (strategy === 'Halted' || vm.metadata.annotations?.[Annotations.vmRunStrategy] === strategy) return;
    await mergePatchWithRetry(client, Resources.virtualMachine, vm, refOf(vm), (fresh) => {
      const current = runStrategyOf(fresh);
      if (current === undefined || current === 'Halted') return undefined;
      if (fresh.metadata.annotations?.[Annotations.vmRunStrategy] === current) return undefined;
      return { metadata: { annotations: { [Annotations.vmRunStrategy]: current } } };
    });
  }

  async function syncLabelsToVmi(vm: VirtualMachine): Promise<void> {
    const cached = vmis.get(keyOf(vm));
    if (!cached) return;
    await updateWithRetry(client, Resources.virtualMachineInstance, cached, refOf(cached), (vmi) => {
      const desired = labelsForVmi(vm, vmi.metadata.labels ?? {});
      if (sameMap(desired, vmi.metadata.labels ?? {})) return undefined;
      vmi.metadata.labels = desired;
      return vmi;
    });
  }

  async function cleanupPvcs(vm: VirtualMachine): Promise<void> {
    const key = keyOf(vm);
    // An injected fault: the handler fails as it would when Harvester's controller is stuck.
    if (ctx.faults.isRemovalHeld(key))
      throw new Error(`cleanupPVCAndSnapshot of VM ${formatKey(key)} is failing (held)`);
    for (const name of removedPvcNames(vm)) {
      const deleted = await client.delete(Resources.pvc, { namespace: vm.metadata.namespace ?? '', name });
      if (deleted) logger.info('deleted PVC removed with its VM', { vm: formatKey(key), pvc: name });
    }
  }

  const onRemove = (vm: VirtualMachine): Promise<FinalizerStep> =>
    reconcileFinalizer(client, Resources.virtualMachine, vm, Finalizers.harvesterVmCleanup, cleanupPvcs);

  return ctx.manager
    .controller('harvester-vm', {
      reconcile: async (key) => {
        const vm = vms.get(key);
        if (!vm || ctx.faults.isForgotten(key)) return;
        if (vm.metadata.deletionTimestamp) {
          await onRemove(vm);
          return;
        }
        await createPvcsFromAnnotation(vm);
        await storeRunStrategy(vm);
        await syncLabelsToVmi(vm);
        // wrangler's OnRemove registration adds its finalizer on the first change it sees.
        await onRemove(vm);
      },
      logger: logger,
    })
    .watch(vms);
}

export function parseTemplates(raw: string): PersistentVolumeClaim[] {
  const parsed = JSON.parse(raw) as unknown;
  if (!Array.isArray(parsed)) throw new Error(`${Annotations.volumeClaimTemplates} is not a JSON array`);
  return parsed.map((entry: PersistentVolumeClaim & { targetVolume?: string; status?: unknown }) => {
    // targetVolume belongs to the annotation entry (storage migration), not to the PVC.
    const { targetVolume: _targetVolume, status: _status, ...pvc } = entry;
    return { ...pvc, metadata: { ...pvc.metadata }, spec: { ...pvc.spec } };
  });
}

export function removedPvcNames(vm: VirtualMachine): string[] {
  return (vm.metadata.annotations?.[Annotations.removedPersistentVolumeClaims] ?? '')
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '');
}

/** The VMI's labels after Harvester's SyncLabelsToVmi: kubevirt.io/* labels are left alone. */
function labelsForVmi(vm: VirtualMachine, current: Record<string, string>): Record<string, string> {
  const template = vm.spec.template.metadata?.labels ?? {};
  const next: Record<string, string> = {};
  for (const [k, v] of Object.entries(current)) {
    if (k.startsWith('kubevirt.io') || k in template) next[k] = v;
  }
  for (const [k, v] of Object.entries(template)) if (!k.startsWith('kubevirt.io')) next[k] = v;
  const maintain = vm.metadata.labels?.[Labels.maintainModeStrategy];
  if (maintain !== undefined) next[Labels.maintainModeStrategy] = maintain;
  return next;
}

function sameMap(a: Record<string, string>, b: Record<string, string>): boolean {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => a[k] === b[k]);
}
