// Proves the sandbox control plane is a real Kubernetes: each test would fail against a fake.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { KubeClient } from '../src/kube/client.js';
import { KubeError } from '../src/kube/errors.js';
import { Resources, type KubeObject } from '../src/kube/resources.js';
import { waitFor } from '../src/kube/wait.js';
import { createNamespace, createTokenUser, tokenKubeconfig } from '../sandbox/control-plane/access.js';
import { repoRoot } from '../sandbox/control-plane/binaries.js';
import { ControlPlaneError, startControlPlane } from '../sandbox/control-plane/control-plane.js';
import { useControlPlane } from './support/control-plane-fixture.js';
import { eventuallyValue } from './support/eventually.js';

const fixture = useControlPlane({ name: 'cp-test', crds: 'harvester' });

interface VmObject extends KubeObject {
  spec: { runStrategy: string; template: unknown };
  status?: { printableStatus?: string; ready?: boolean };
}

describe('control plane', () => {
  it('round-trips a VirtualMachine and updates its status only through the status subresource', async () => {
    const { admin } = fixture.cp;
    const namespace = await createNamespace(admin, 'vm-roundtrip');
    const vm: VmObject = {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachine',
      metadata: { name: 'vm1', namespace },
      spec: { runStrategy: 'RerunOnFailure', template: { spec: { domain: { devices: {} } } } },
    };
    const created = await admin.create(Resources.virtualMachine, vm);
    // A status written with the object itself is dropped when status is a subresource.
    const withStatus = { ...created, status: { printableStatus: 'Running' } };
    const updated = await admin.update(Resources.virtualMachine, withStatus);
    assert.equal(updated.status?.printableStatus, undefined);
    const statusUpdated = await admin.update(
      Resources.virtualMachine,
      { ...updated, status: { printableStatus: 'Running', ready: true } },
      'status',
    );
    assert.equal(statusUpdated.status?.printableStatus, 'Running');
    const read = await admin.get<VmObject>(Resources.virtualMachine, { namespace, name: 'vm1' });
    assert.equal(read.status?.ready, true);
    assert.equal(read.spec.runStrategy, 'RerunOnFailure');
  });

  it('deletes a dependent before its owner with Foreground propagation (garbage collector)', async () => {
    const { admin } = fixture.cp;
    const namespace = await createNamespace(admin, 'gc');
    const owner = await admin.create<KubeObject>(Resources.configMap, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'owner', namespace },
    });
    await admin.create<KubeObject>(Resources.secret, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: 'dependent',
        namespace,
        finalizers: ['test.harvester-machine/hold'],
        ownerReferences: [
          {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            name: 'owner',
            uid: owner.metadata.uid ?? '',
            blockOwnerDeletion: true,
          },
        ],
      },
    });
    await admin.delete(
      Resources.configMap,
      { namespace, name: 'owner' },
      { propagationPolicy: 'Foreground' },
    );
    // The owner waits for its dependent: it is still there, with foregroundDeletion.
    const dependentDeleting = await waitFor<KubeObject>(admin, {
      type: Resources.secret,
      namespace,
      name: 'dependent',
      description: 'the dependent to be marked for deletion by the garbage collector',
      timeoutMs: 30_000,
      until: (o) => o?.metadata.deletionTimestamp !== undefined,
    });
    assert.ok(dependentDeleting);
    const held = await admin.get<KubeObject>(Resources.configMap, { namespace, name: 'owner' });
    assert.deepEqual(held.metadata.finalizers, ['foregroundDeletion']);
    await admin.patch(Resources.secret, { namespace, name: 'dependent' }, { metadata: { finalizers: null } });
    await waitFor(admin, {
      type: Resources.configMap,
      namespace,
      name: 'owner',
      description: 'the owner to be deleted after its dependent',
      timeoutMs: 30_000,
      until: (o) => o === undefined,
    });
    assert.equal(await admin.find(Resources.secret, { namespace, name: 'dependent' }), undefined);
  });

  it('removes an unused PVC once deleted (pvc-protection controller)', async () => {
    const { admin } = fixture.cp;
    const namespace = await createNamespace(admin, 'pvc');
    const pvc = await admin.create<KubeObject>(Resources.pvc, {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'data', namespace },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    } as KubeObject);
    assert.deepEqual(pvc.metadata.finalizers, ['kubernetes.io/pvc-protection']);
    await admin.delete(Resources.pvc, { namespace, name: 'data' });
    await waitFor(admin, {
      type: Resources.pvc,
      namespace,
      name: 'data',
      description: 'PVC data to be removed',
      timeoutMs: 30_000,
      until: (o) => o === undefined,
      describeState: (o) => (o ? `finalizers ${JSON.stringify(o.metadata.finalizers)}` : 'gone'),
    });
  });

  it('answers 401 to an expired bootstrap token and 403 with Kubernetes’ message to an RBAC denial', async () => {
    const { cp } = fixture;
    const namespace = await createNamespace(cp.admin, 'auth');
    const user = await createTokenUser(cp.admin, {
      expiresAt: new Date(Date.now() + 4_000),
      namespace,
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }],
    });
    const client = KubeClient.fromKubeconfig(
      tokenKubeconfig({ name: 'u', server: cp.server, caPem: cp.caPem, token: user.token }),
    );
    try {
      await client.list(Resources.configMap, { namespace }); // allowed
      const denied = await client.get(Resources.secret, { namespace, name: 'x' }).catch((e: unknown) => e);
      assert.ok(denied instanceof KubeError);
      assert.equal(denied.kind, 'Forbidden');
      assert.equal(denied.statusCode, 403);
      assert.match(
        denied.message,
        new RegExp(
          `secrets "x" is forbidden: User "${user.username}" cannot get resource "secrets" in API group "" in the namespace "${namespace}"`,
        ),
      );
      // The apiserver caches a successful token authentication for up to 10 s, so an expired
      // token is refused within ~10 s of its expiration, not always at once.
      await new Promise((r) => setTimeout(r, Math.max(0, user.expiresAt.getTime() - Date.now())));
      const expired = await eventuallyValue(
        'the expired token to be refused',
        () =>
          client.list(Resources.configMap, { namespace }).then(
            () => undefined,
            (e: unknown) => e,
          ),
        (e) => e instanceof KubeError,
        15_000,
      );
      console.log(`expired token refused ${Date.now() - user.expiresAt.getTime()} ms after its expiration`);
      assert.ok(expired instanceof KubeError);
      assert.equal(expired.statusCode, 401);
      assert.equal(expired.kind, 'CredentialRejected');
      assert.doesNotMatch(expired.message, new RegExp(user.token.split('.')[1] ?? 'never'));
    } finally {
      client.close();
    }
  });

  it('runs a second, independent control plane side by side', async () => {
    const first = fixture.cp;
    const second = await startControlPlane({ name: 'cp-second', controllerManager: false });
    try {
      assert.notEqual(first.server, second.server);
      const ns = await createNamespace(second.admin, 'only-in-second');
      assert.ok(await second.admin.find(Resources.namespace, { name: ns }));
      assert.equal(await first.admin.find(Resources.namespace, { name: ns }), undefined);
    } finally {
      await second.stop();
    }
    assert.equal(fs.existsSync(second.dir), false);
  });
});

describe('control plane failures', () => {
  it('names the step when the apiserver port is taken, and cleans up', async () => {
    const holder = net.createServer();
    await new Promise<void>((r) => holder.listen(0, '127.0.0.1', () => r()));
    const port = (holder.address() as net.AddressInfo).port;
    const before = fs.readdirSync(os.tmpdir()).filter((d) => d.startsWith('hm-taken-'));
    try {
      const err = await startControlPlane({
        name: 'taken',
        apiserverPort: port,
        readyTimeoutMs: 20_000,
      }).catch((e: unknown) => e);
      assert.ok(err instanceof ControlPlaneError, String(err));
      assert.match(err.message, /step 'start kube-apiserver'/);
      assert.match(err.message, /port is in use/);
    } finally {
      holder.close();
    }
    const afterDirs = fs.readdirSync(os.tmpdir()).filter((d) => d.startsWith('hm-taken-'));
    assert.deepEqual(afterDirs, before);
    assert.equal(
      spawnSync('pgrep', ['-f', 'hm-taken-']).status,
      1,
      'no process of the failed control plane is left',
    );
  });

  it('names the step when a component is not ready by the deadline, and cleans up', async () => {
    const err = await startControlPlane({ name: 'slow', readyTimeoutMs: 1 }).catch((e: unknown) => e);
    assert.ok(err instanceof ControlPlaneError);
    assert.match(err.message, /step '(start etcd|wait for kube-apiserver \/readyz)'/);
    assert.equal(fs.readdirSync(os.tmpdir()).filter((d) => d.startsWith('hm-slow-')).length, 0);
    assert.equal(spawnSync('pgrep', ['-f', 'hm-slow-']).status, 1);
  });

  it('says which build step failed without Go, and with an unreachable module proxy', () => {
    const script = path.join(repoRoot(), 'sandbox', 'control-plane', 'build-binaries.sh');
    const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-build-test-'));
    try {
      const noGo = spawnSync('bash', [script], {
        encoding: 'utf8',
        env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', HOME: cache, HARVESTER_MACHINE_CACHE: cache },
      });
      if (
        spawnSync('bash', ['-c', 'command -v go'], { env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' } })
          .status !== 0
      ) {
        assert.equal(noGo.status, 1);
        assert.match(noGo.stderr, /^build-binaries: step 'find Go': no 'go' on PATH; install Go/m);
      }
      const noProxy = spawnSync('bash', [script], {
        encoding: 'utf8',
        env: {
          ...process.env,
          HARVESTER_MACHINE_CACHE: cache,
          GOPROXY: 'http://127.0.0.1:9',
          GOMODCACHE: path.join(cache, 'mod'),
          GOFLAGS: '-mod=mod',
          GONOSUMDB: '*',
          GOFLAGS_UNUSED: '',
        },
        timeout: 120_000,
      });
      assert.equal(noProxy.status, 1);
      assert.match(
        noProxy.stderr,
        /build-binaries: step 'go mod tidy' for k8s\.io\/kubernetes .* failed; check that the Go module proxy is reachable/,
      );
    } finally {
      spawnSync('chmod', ['-R', 'u+w', cache]);
      fs.rmSync(cache, { recursive: true, force: true });
    }
  });
});
