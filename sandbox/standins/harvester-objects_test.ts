// Harvester's KeyPair and image controllers, its PVC finalizer and Longhorn's binding.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { admissionDenial, isConflict } from '../../src/kube/errors.js';
import { Resources } from '../../src/kube/resources.js';
import { createNamespace } from '../control-plane/access.js';
import { IMPORTED_IMAGE_VIRTUAL_SIZE } from './harvester/image-controller.js';
import { pvcDeletionVerdict, pvcsNamedBy, type AdmissionRequest } from './harvester/pvc-webhook.js';
import { Annotations, Finalizers, Labels } from './names.js';
import { gone, importedImage, useHarvester, waitUntil } from './testing.js';
import type {
  KeyPair,
  PersistentVolumeClaim,
  StorageClass,
  VirtualMachine,
  VirtualMachineImage,
} from './types.js';
import { patchFinalizers, withoutFinalizer } from './writes.js';

const hasSshKeygen = spawnSync('ssh-keygen', ['-?']).error === undefined;

function keyPair(namespace: string, name: string, publicKey: string): KeyPair {
  return {
    apiVersion: 'harvesterhci.io/v1beta1',
    kind: 'KeyPair',
    metadata: { name, namespace },
    spec: { publicKey },
  };
}

describe('Harvester object controllers', () => {
  const s = useHarvester({ name: 'standins-hobj', kubevirt: false });

  it(
    'validates a KeyPair with the fingerprint ssh-keygen -E md5 prints',
    { skip: !hasSshKeygen && 'no ssh-keygen here' },
    async () => {
      const { client } = s;
      const ns = await createNamespace(client, 'keypair');
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-keypair-'));
      try {
        const file = path.join(dir, 'id');
        assert.equal(
          spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'me@example', '-f', file]).status,
          0,
        );
        const publicKey = fs.readFileSync(`${file}.pub`, 'utf8');
        const printed = spawnSync('ssh-keygen', ['-l', '-E', 'md5', '-f', `${file}.pub`], {
          encoding: 'utf8',
        }).stdout;
        const expected = /MD5:([0-9a-f:]+)/.exec(printed)?.[1];
        await client.create(Resources.keyPair, keyPair(ns, 'mine', publicKey));
        const kp = await waitUntil<KeyPair>(
          client,
          Resources.keyPair,
          { namespace: ns, name: 'mine' },
          'validated',
          (k) => k?.status?.conditions?.some((c) => c.type === 'validated') ?? false,
        );
        assert.equal(kp?.status?.fingerPrint, expected);
        const [cond, ...rest] = kp?.status?.conditions ?? [];
        assert.equal(rest.length, 0);
        assert.equal(cond?.status, 'True');
        assert.match(cond?.lastUpdateTime ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  it('marks a KeyPair that does not parse validated=False with the parse error as reason', async () => {
    const { client } = s;
    const ns = await createNamespace(client, 'keypair-bad');
    await client.create(Resources.keyPair, keyPair(ns, 'bad', 'ssh-rsa not-base64!! me@example'));
    const kp = await waitUntil<KeyPair>(
      client,
      Resources.keyPair,
      { namespace: ns, name: 'bad' },
      'validated=False',
      (k) => k?.status?.conditions?.some((c) => c.type === 'validated') ?? false,
    );
    assert.equal(kp?.status?.fingerPrint, undefined);
    const cond = kp?.status?.conditions?.[0];
    assert.equal(cond?.status, 'False');
    assert.equal(cond?.reason, 'failed to parse the public key, error: ssh: no key found');
  });

  it('imports an image: StorageClass lh-<uid> with its backing image, conditions and progress as Harvester sets them', async () => {
    const { client } = s;
    const ns = await createNamespace(client, 'image');
    const image = await importedImage(client, ns, 'focal');
    const scName = `lh-${image.metadata.uid ?? ''}`;
    assert.equal(image.status?.storageClassName, scName);
    assert.equal(image.status?.progress, 100);
    assert.equal(image.status?.virtualSize, IMPORTED_IMAGE_VIRTUAL_SIZE);
    assert.equal(image.status?.appliedUrl, image.spec.url);
    const byType = Object.fromEntries((image.status?.conditions ?? []).map((c) => [c.type, c]));
    assert.equal(byType.Initialized?.status, 'True');
    assert.equal(byType.Initialized?.reason, 'Initialized');
    assert.equal(byType.Imported?.status, 'True');
    assert.equal(byType.Imported?.reason, 'Imported');
    assert.equal(byType.RetryLimitExceeded?.status, 'False');
    assert.deepEqual(image.metadata.finalizers, [Finalizers.harvesterImage]);
    const sc = await client.get<StorageClass>(Resources.storageClass, { name: scName });
    assert.equal(sc.provisioner, 'driver.longhorn.io');
    assert.equal(sc.allowVolumeExpansion, true);
    assert.equal(sc.parameters?.backingImage, `vmi-${image.metadata.uid ?? ''}`);
    const labelled = await waitUntil<VirtualMachineImage>(
      client,
      Resources.virtualMachineImage,
      { namespace: ns, name: 'focal' },
      'display name label',
      (i) => i?.metadata.labels?.[Labels.imageDisplayName] === 'focal.qcow2',
    );
    assert.ok(labelled);

    await client.delete(Resources.virtualMachineImage, { namespace: ns, name: 'focal' });
    await waitUntil(
      client,
      Resources.virtualMachineImage,
      { namespace: ns, name: 'focal' },
      'image gone',
      gone,
    );
    assert.equal(await client.find(Resources.storageClass, { name: scName }), undefined);
  });

  it('keeps the legacy StorageClass name longhorn-<image name> when that class exists', async () => {
    const { client } = s;
    const ns = await createNamespace(client, 'image-legacy');
    await client.create<StorageClass>(Resources.storageClass, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: 'longhorn-legacy-img' },
      provisioner: 'driver.longhorn.io',
    });
    const image = await importedImage(client, ns, 'legacy-img');
    assert.equal(image.status?.storageClassName, 'longhorn-legacy-img');
  });

  it('puts its finalizer on every PVC and lifts it on deletion; only Longhorn classes bind', async () => {
    const { client } = s;
    const ns = await createNamespace(client, 'pvc-final');
    const pvc = (name: string, storageClassName: string): PersistentVolumeClaim => ({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name, namespace: ns },
      spec: { accessModes: ['ReadWriteOnce'], storageClassName, resources: { requests: { storage: '1Gi' } } },
    });
    await client.create(Resources.pvc, pvc('elsewhere', 'nfs-somewhere'));
    await client.create(Resources.pvc, pvc('longhorn', 'harvester-longhorn'));
    const other = await waitUntil<PersistentVolumeClaim>(
      client,
      Resources.pvc,
      { namespace: ns, name: 'elsewhere' },
      'finalizer',
      (p) => (p?.metadata.finalizers ?? []).includes(Finalizers.harvesterPvc),
    );
    await waitUntil<PersistentVolumeClaim>(
      client,
      Resources.pvc,
      { namespace: ns, name: 'longhorn' },
      'bound',
      (p) => p?.status?.phase === 'Bound',
    );
    await s.standIns.idle();
    assert.equal(
      (await client.get<PersistentVolumeClaim>(Resources.pvc, { namespace: ns, name: 'elsewhere' })).status
        ?.phase,
      'Pending',
    );
    assert.ok(other);
    await client.delete(Resources.pvc, { namespace: ns, name: 'elsewhere' });
    await waitUntil(client, Resources.pvc, { namespace: ns, name: 'elsewhere' }, 'PVC gone', gone);
  });
});

describe("Harvester's PVC deletion webhook", () => {
  const s = useHarvester({ name: 'standins-pvcwh', kubevirt: false });
  const claim = (namespace: string, name: string): PersistentVolumeClaim => ({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
  });
  const vmNaming = (namespace: string, name: string, claimName: string): VirtualMachine => ({
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachine',
    metadata: { name, namespace, finalizers: ['example.com/hold'] },
    spec: {
      runStrategy: 'Halted',
      template: {
        spec: {
          domain: { devices: {} },
          volumes: [{ name: 'disk-0', persistentVolumeClaim: { claimName } }],
        },
      },
    },
  });
  const refusal = async (namespace: string, name: string, dryRun: boolean): Promise<string | undefined> => {
    try {
      await s.client.delete(Resources.pvc, { namespace, name }, dryRun ? { dryRun: true } : {});
      return undefined;
    } catch (err) {
      const denial = admissionDenial(err);
      if (!denial) throw err;
      assert.equal(denial.webhook, 'validator.harvesterhci.io');
      assert.ok(isConflict(err), 'Conflict, as Harvester v1.8.0 answers');
      return denial.message;
    }
  };

  it('refuses, on a dry run too, while a VM that is not being deleted names the PVC; then lets it go', async () => {
    const { client } = s;
    const ns = await createNamespace(client, 'pvcwh');
    await client.create(Resources.pvc, claim(ns, 'used'));
    await client.create(Resources.pvc, claim(ns, 'free'));
    await client.create(Resources.virtualMachine, vmNaming(ns, 'user', 'used'));
    await s.standIns.idle();
    const words = `can not delete the volume used which is currently attached to VM: ${ns}/user`;
    assert.equal(await refusal(ns, 'used', true), words);
    assert.equal(await refusal(ns, 'used', false), words);
    // A dry run of a PVC no VM names is let through, and deletes nothing.
    assert.equal(await refusal(ns, 'free', true), undefined);
    assert.ok(await client.find(Resources.pvc, { namespace: ns, name: 'free' }));
    // The VM going (held by a finalizer of ours) no longer counts.
    await client.delete(Resources.virtualMachine, { namespace: ns, name: 'user' });
    await s.standIns.idle();
    assert.equal(await refusal(ns, 'used', true), undefined);
    await patchFinalizers(
      client,
      Resources.virtualMachine,
      await client.get<VirtualMachine>(Resources.virtualMachine, { namespace: ns, name: 'user' }),
      withoutFinalizer('example.com/hold'),
    );
  });

  it('counts a name in the volumeClaimTemplates annotation as Harvester’s index does; the garbage collector’s deletions pass', () => {
    const vm = vmNaming('ns', 'tpl', 'disk-a');
    vm.metadata.annotations = {
      [Annotations.volumeClaimTemplates]: JSON.stringify([{ metadata: { name: 'disk-b' }, spec: {} }]),
    };
    assert.deepEqual(pvcsNamedBy(vm).sort(), ['ns/disk-a', 'ns/disk-b']);
    const request = (username: string): AdmissionRequest => ({
      uid: 'u',
      operation: 'DELETE',
      resource: { group: '', resource: 'persistentvolumeclaims' },
      userInfo: { username },
      oldObject: claim('ns', 'disk-b'),
    });
    assert.equal(pvcDeletionVerdict(request('someone'), [vm]).allowed, false);
    assert.equal(
      pvcDeletionVerdict(request('system:serviceaccount:kube-system:generic-garbage-collector'), [vm])
        .allowed,
      true,
    );
    assert.equal(pvcDeletionVerdict({ ...request('someone'), operation: 'UPDATE' }, [vm]).allowed, true);
  });
});
