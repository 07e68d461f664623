// KubeVirt's VM controller (virt-controller pkg/virt-controller/watch/vm, v1.7.0): the
// run strategies, the state change requests the start/stop/restart subresources leave
// in status, the VMI it creates and deletes, declarative hot-plug, the finalizers on
// the VM and its VMI, and the VM status (printableStatus, ready, created, conditions).
import { isKubeError } from '../../../src/kube/errors.js';
import { Resources } from '../../../src/kube/resources.js';
import type { StandInContext } from '../context.js';
import { Annotations, Finalizers } from '../names.js';
import { Reconciler, keyOf, sameJson } from '../runtime.js';
import type { PersistentVolumeClaim, VirtualMachine, VirtualMachineInstance } from '../types.js';
import {
  mergePatchWithRetry,
  patchFinalizers,
  refOf,
  updateWithRetry,
  withFinalizer,
  withoutFinalizer,
} from '../writes.js';
import { hotplugPatch } from './hotplug.js';
import { runStrategyOf } from './run-strategy.js';
import { hasStartRequest, hasStopRequestFor, isFinal, nextVmStatus } from './vm-status.js';
import { claimNameOf, vmiForVm } from './vmi-template.js';

const EXPECTATION_TTL_MS = 30_000;

/** virt-controller's expectations: after a create or delete, wait until the cache shows it. */
class Expectations {
  private readonly creations = new Map<string, { uid: string; at: number }>();
  private readonly deletions = new Map<string, { uid: string; at: number }>();

  expectCreation(key: string, uid: string): void {
    this.creations.set(key, { uid, at: Date.now() });
  }

  expectDeletion(key: string, uid: string): void {
    this.deletions.set(key, { uid, at: Date.now() });
  }

  /** Settles what the cache now shows; true while something is still awaited. */
  pending(key: string, vmi: VirtualMachineInstance | undefined): { start: boolean; stop: boolean } {
    const fresh = (e: { at: number } | undefined) =>
      e !== undefined && Date.now() - e.at < EXPECTATION_TTL_MS;
    const created = this.creations.get(key);
    if (!fresh(created) || (vmi && vmi.metadata.uid === created?.uid)) this.creations.delete(key);
    const deleted = this.deletions.get(key);
    if (!fresh(deleted) || !vmi || vmi.metadata.uid !== deleted?.uid || vmi.metadata.deletionTimestamp) {
      this.deletions.delete(key);
    }
    return { start: this.creations.has(key), stop: this.deletions.has(key) };
  }

  forget(key: string): void {
    this.creations.delete(key);
    this.deletions.delete(key);
  }
}

export function kubevirtVmController(ctx: StandInContext): Reconciler {
  const { client } = ctx;
  const vms = ctx.informers.get<VirtualMachine>(Resources.virtualMachine);
  const vmis = ctx.informers.get<VirtualMachineInstance>(Resources.virtualMachineInstance);
  const pvcs = ctx.informers.get<PersistentVolumeClaim>(Resources.pvc);
  const expectations = new Expectations();
  const logger = ctx.logger.child({ controller: 'kubevirt-vm' });

  async function startVmi(key: string, vm: VirtualMachine): Promise<void> {
    try {
      const vmi = await client.create<VirtualMachineInstance>(Resources.virtualMachineInstance, vmiForVm(vm));
      expectations.expectCreation(key, vmi.metadata.uid ?? '');
      logger.info('Started VM by creating the new virtual machine instance', { vm: key });
    } catch (err) {
      // The previous VMI is still being removed: its deletion event brings us back.
      if (!isKubeError(err, 'AlreadyExists')) throw err;
    }
  }

  async function stopVmi(key: string, vmi: VirtualMachineInstance | undefined): Promise<void> {
    if (!vmi || vmi.metadata.deletionTimestamp) return;
    expectations.expectDeletion(key, vmi.metadata.uid ?? '');
    await client.delete(Resources.virtualMachineInstance, refOf(vmi), {
      preconditions: { uid: vmi.metadata.uid ?? '' },
    });
    logger.info('Stopped the virtual machine by deleting the virtual machine instance', {
      vm: key,
      uid: vmi.metadata.uid,
    });
  }

  /** addStartRequest: a JSON patch on status that appends Start to what was read. */
  async function addStartRequest(vm: VirtualMachine): Promise<void> {
    const requests = vm.status?.stateChangeRequests;
    const patched = await client.patch<VirtualMachine>(
      Resources.virtualMachine,
      { ...refOf(vm), subresource: 'status' },
      [
        { op: 'test', path: '/status/stateChangeRequests', value: requests ?? null },
        requests
          ? { op: 'add', path: '/status/stateChangeRequests/-', value: { action: 'Start' } }
          : { op: 'add', path: '/status/stateChangeRequests', value: [{ action: 'Start' }] },
      ],
      'json',
    );
    vm.status = patched.status;
  }

  /** RerunOnFailure: restart only after a failure; start on creation or on a start request. */
  async function rerunOnFailure(
    key: string,
    vm: VirtualMachine,
    vmi: VirtualMachineInstance | undefined,
  ): Promise<void> {
    if (vmi) {
      const failed = vmi.status?.phase === 'Failed';
      const done = failed || vmi.status?.phase === 'Succeeded';
      if (!vmi.metadata.deletionTimestamp && (hasStopRequestFor(vm, vmi) || done)) {
        await stopVmi(key, vmi);
        if (failed) await addStartRequest(vm);
      }
      return;
    }
    // The runStrategy recorded in status tells a new VM from a stopped one.
    if (!hasStartRequest(vm) && vm.status?.runStrategy === 'RerunOnFailure') return;
    await startVmi(key, vm);
  }

  /** syncRunStrategy: acts on the run strategy and the first state change request. */
  async function syncRunStrategy(
    key: string,
    vm: VirtualMachine,
    vmi: VirtualMachineInstance | undefined,
  ): Promise<void> {
    const strategy = runStrategyOf(vm);
    switch (strategy) {
      case 'Always':
        if (vmi && (hasStopRequestFor(vm, vmi) || isFinal(vmi))) return stopVmi(key, vmi);
        return vmi ? undefined : startVmi(key, vm);
      case 'RerunOnFailure':
        return rerunOnFailure(key, vm, vmi);
      case 'Manual':
        if (vmi && hasStopRequestFor(vm, vmi)) return stopVmi(key, vmi);
        return !vmi && hasStartRequest(vm) ? startVmi(key, vm) : undefined;
      case 'Halted':
        if (vmi) return stopVmi(key, vmi);
        if (!hasStartRequest(vm)) return;
        // A start request on a halted VM turns it into an Always VM.
        await mergePatchWithRetry(client, Resources.virtualMachine, vm, refOf(vm), (fresh) =>
          fresh.spec.running !== undefined
            ? { spec: { running: true } }
            : { spec: { runStrategy: 'Always' } },
        );
        return;
      case 'Once':
        return vmi ? undefined : startVmi(key, vm);
      case 'WaitAsReceiver':
      case undefined:
        logger.warn('run strategy not played by the sandbox', { vm: key, strategy: strategy ?? 'invalid' });
        return;
    }
  }

  const hasUnboundPvc = (vm: VirtualMachine): boolean =>
    (vm.spec.template.spec.volumes ?? []).some((v) => {
      const claim = claimNameOf(v);
      const pvc = claim === undefined ? undefined : pvcs.get(keyOf(vm.metadata.namespace, claim));
      return pvc !== undefined && pvc.status?.phase !== 'Bound';
    });

  async function updateStatus(
    vm: VirtualMachine,
    vmi: VirtualMachineInstance | undefined,
    pending: { start: boolean; stop: boolean },
  ): Promise<void> {
    await updateWithRetry(
      client,
      Resources.virtualMachine,
      vm,
      refOf(vm),
      (fresh) => {
        // Computed from the freshest VM: requests virt-api added meanwhile are kept.
        const status = nextVmStatus({
          vm: fresh,
          vmi,
          startExpected: pending.start,
          stopExpected: pending.stop,
          hasUnboundPvc: hasUnboundPvc(fresh),
        });
        return sameJson(status, fresh.status ?? {}) ? undefined : { ...fresh, status };
      },
      'status',
    );
    // The VM controller's finalizer lets it see a VMI's final state before the VMI goes.
    if (vmi && isFinal(vmi) && (vmi.metadata.finalizers ?? []).includes(Finalizers.kubevirtVmController)) {
      await patchFinalizers(
        client,
        Resources.virtualMachineInstance,
        vmi,
        withoutFinalizer(Finalizers.kubevirtVmController),
      );
    }
  }

  const reconciler = new Reconciler(
    'kubevirt-vm',
    async (key) => {
      const cached = vms.get(key);
      if (!cached) return void expectations.forget(key);
      const vm = structuredClone(cached);
      let vmi = vmis.get(key);
      if (vmi && !vmi.metadata.ownerReferences?.some((o) => o.controller && o.uid === vm.metadata.uid))
        vmi = undefined;
      const pending = expectations.pending(key, vmi);

      // First, as virt-controller does: record the API version the controller observed.
      if (
        vm.metadata.annotations?.[Annotations.latestObservedApiVersion] !== 'v1' ||
        vm.metadata.annotations[Annotations.storageObservedApiVersion] !== 'v1'
      ) {
        await mergePatchWithRetry(client, Resources.virtualMachine, cached, refOf(cached), () => ({
          metadata: {
            annotations: {
              [Annotations.latestObservedApiVersion]: 'v1',
              [Annotations.storageObservedApiVersion]: 'v1',
            },
          },
        }));
        return;
      }
      if (pending.start || pending.stop) return updateStatus(vm, vmi, pending);

      if (vm.metadata.deletionTimestamp) {
        if (!vmi || (vm.metadata.finalizers ?? []).includes('orphan')) {
          await patchFinalizers(
            client,
            Resources.virtualMachine,
            cached,
            withoutFinalizer(Finalizers.kubevirtVmController),
          );
        } else {
          await stopVmi(key, vmi);
        }
      } else {
        const added = await patchFinalizers(
          client,
          Resources.virtualMachine,
          cached,
          withFinalizer(Finalizers.kubevirtVmController),
        );
        if (added) return; // its own event brings the rest
        await syncRunStrategy(key, vm, vmi);
        const patch = vmi && !vmi.metadata.deletionTimestamp ? hotplugPatch(vm, vmi) : undefined;
        if (vmi && patch) await client.patch(Resources.virtualMachineInstance, refOf(vmi), patch.ops, 'json');
      }
      await updateStatus(vm, vmi, expectations.pending(key, vmi));
    },
    logger,
  );
  reconciler.watch(vms);
  reconciler.watch(vmis, (e) => {
    const owner = e.object.metadata.ownerReferences?.find((o) => o.controller && o.kind === 'VirtualMachine');
    return owner ? keyOf(e.object.metadata.namespace, owner.name) : undefined;
  });
  reconciler.watch(pvcs, (e) =>
    vms
      .list(
        (vm) =>
          vm.metadata.namespace === e.object.metadata.namespace &&
          (vm.spec.template.spec.volumes ?? []).some((v) => claimNameOf(v) === e.object.metadata.name),
      )
      .map((vm) => keyOf(vm.metadata.namespace, vm.metadata.name)),
  );
  return reconciler;
}
