// The stand-ins keep working across a restart of the Harvester kube-apiserver: their
// informers resume (relist + watch) and their queues retry what failed meanwhile.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Resources } from '../../src/kube/resources.js';
import { createNamespace } from '../control-plane/access.js';
import { sandboxSshKey } from '../sandbox-seeds.js';
import { ExtraResources } from './names.js';
import { driverVm, gone, useHarvester, waitUntil } from './testing.js';
import type { KeyPair, Pod, VirtualMachine, VirtualMachineInstance } from './types.js';

describe('stand-ins across an apiserver restart', () => {
  const s = useHarvester({ name: 'standins-restart' });

  it('start, stop and validate objects made after the restart, and act on ones made before', async () => {
    const { client, standIns } = s;
    const ns = await createNamespace(client, 'restart');
    await client.create(
      Resources.virtualMachine,
      driverVm(ns, 'before', {
        disks: [{ name: 'before-boot', storage: '1Gi', storageClassName: 'harvester-longhorn' }],
      }),
    );
    const before = await waitUntil<VirtualMachineInstance>(
      client,
      Resources.virtualMachineInstance,
      { namespace: ns, name: 'before' },
      'an IP',
      (v) => Boolean(v?.status?.interfaces?.[0]?.ipAddress),
    );

    await s.cp.restartApiserver();

    // Made after the restart: only resumed watches can see these.
    await client.create(
      Resources.virtualMachine,
      driverVm(ns, 'after', {
        disks: [{ name: 'after-boot', storage: '1Gi', storageClassName: 'harvester-longhorn' }],
      }),
    );
    await client.create<KeyPair>(Resources.keyPair, {
      apiVersion: 'harvesterhci.io/v1beta1',
      kind: 'KeyPair',
      metadata: { name: 'kp', namespace: ns },
      spec: { publicKey: sandboxSshKey().publicKey },
    });
    await client.patch(
      Resources.virtualMachine,
      { namespace: ns, name: 'before', subresource: 'status' },
      {
        status: { stateChangeRequests: [{ action: 'Stop', uid: before?.metadata.uid }] },
      },
    );
    const after = await waitUntil<VirtualMachineInstance>(
      client,
      Resources.virtualMachineInstance,
      { namespace: ns, name: 'after' },
      'the new VM running with an IP',
      (v) => Boolean(v?.status?.interfaces?.[0]?.ipAddress),
      // KubeVirt's own virt-controller resumes its watches with client-go's backoff after the
      // restart: under the suite's load that took past 45 s in two clean-clone runs.
      120_000,
    );
    assert.ok(after);
    await waitUntil(
      client,
      Resources.virtualMachineInstance,
      { namespace: ns, name: 'before' },
      'the old VM stopped',
      gone,
      120_000,
    );
    await waitUntil<KeyPair>(
      client,
      Resources.keyPair,
      { namespace: ns, name: 'kp' },
      "KeyPair validated by Harvester's own controller",
      (k) => k?.status?.conditions?.some((c) => c.type === 'validated' && c.status === 'True') ?? false,
    );
    await waitUntil<VirtualMachine>(
      client,
      Resources.virtualMachine,
      { namespace: ns, name: 'before' },
      'old VM Stopped',
      (v) => v?.status?.printableStatus === 'Stopped',
    );
    await standIns.idle();
    // Nothing was done twice: one launcher pod, for the running VM only.
    const pods = await client.list<Pod>(ExtraResources.pod, { namespace: ns });
    assert.deepEqual(
      pods.items.map((p) => p.metadata.labels?.['vm.kubevirt.io/name']),
      ['after'],
    );
    const pvcs = await client.list(Resources.pvc, { namespace: ns });
    assert.deepEqual(pvcs.items.map((p) => p.metadata.name).sort(), ['after-boot', 'before-boot']);
  });
});
