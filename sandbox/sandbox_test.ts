// The whole sandbox from a user's side: three kubeconfigs that work, the objects a machine
// pool refers to, least-privilege driver access, and a VM that the stand-ins run and that
// start/stop through the proxy act on.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { KubeClient } from '../src/kube/client.js';
import type { KubeError } from '../src/kube/errors.js';
import { isForbidden } from '../src/kube/errors.js';
import { Resources, resourcePath, type KubeObject } from '../src/kube/resources.js';
import { waitFor } from '../src/kube/wait.js';
import {
  ANNOTATION_CREDENTIAL_EXPIRATION,
  CREDENTIAL_KEY_KUBECONFIG,
} from '../src/rancher/cloud-credential.js';
import type { SecretObject } from './rancher/credentials.js';
import { RancherResources } from './rancher/resources.js';
import { startSandbox, type Sandbox } from './sandbox.js';

let sandbox: Sandbox | undefined;
before(async () => {
  sandbox = await startSandbox({ standIns: { delays: { guestAgentMs: 100 } } });
});
after(async () => {
  await sandbox?.stop();
});
const sbx = (): Sandbox => {
  if (!sandbox) throw new Error('the sandbox is not started');
  return sandbox;
};

const deny = async (promise: Promise<unknown>): Promise<KubeError> => {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(isForbidden(err), `expected Forbidden, got ${String(err)}`);
  return err;
};

describe('sandbox', () => {
  it('gives a direct and a via-Rancher kubeconfig that both see what a machine pool refers to', async () => {
    const { kubeconfigs, seeds } = sbx();
    for (const kubeconfig of [kubeconfigs.harvesterDirect, kubeconfigs.harvesterViaRancher]) {
      const client = KubeClient.fromKubeconfig(kubeconfig);
      try {
        const at = { namespace: seeds.namespace };
        const image = await client.get<KubeObject & { status?: { storageClassName?: string } }>(
          Resources.virtualMachineImage,
          { ...at, name: seeds.image },
        );
        assert.ok(image.status?.storageClassName, 'the image is imported and has its storage class');
        assert.ok(await client.get(Resources.storageClass, { name: image.status.storageClassName }));
        assert.ok(await client.get(Resources.storageClass, { name: 'longhorn' }));
        assert.ok(await client.get(Resources.networkAttachmentDefinition, { ...at, name: seeds.network }));
        const key = await client.get<
          KubeObject & { status?: { conditions?: Array<{ type: string; status: string }> } }
        >(Resources.keyPair, { ...at, name: seeds.keyPair });
        assert.ok(key.status?.conditions?.some((c) => c.type === 'validated' && c.status === 'True'));
        // Written by Harvester itself at start: the version its build stamped, as the default.
        const version = await client.get<KubeObject & { value?: string; default?: string }>(
          Resources.setting,
          {
            name: 'server-version',
          },
        );
        assert.equal(version.value || version.default, 'v1.8.0');
      } finally {
        client.close();
      }
    }
  });

  it('keeps the Rancher side consistent: token, cluster and a cloud credential holding the kubeconfig', async () => {
    const { kubeconfigs, rancherToken, cloudCredential, clusterId } = sbx();
    const rancher = KubeClient.fromKubeconfig(kubeconfigs.rancherLocal);
    try {
      assert.ok(await rancher.get(RancherResources.token, { name: rancherToken.name }));
      assert.ok(await rancher.get(RancherResources.cluster, { name: clusterId }));
      const secret = await rancher.get<SecretObject>(Resources.secret, cloudCredential);
      assert.equal(
        Buffer.from(secret.data?.[CREDENTIAL_KEY_KUBECONFIG] ?? '', 'base64').toString(),
        kubeconfigs.harvesterViaRancher,
      );
      assert.equal(
        secret.metadata.annotations?.[ANNOTATION_CREDENTIAL_EXPIRATION],
        String(rancherToken.expiresAt?.getTime()),
      );
    } finally {
      rancher.close();
    }
  });

  it('renews the cloud credential as Rancher’s UI does: a new token in the same Secret', async () => {
    const { rancher, cloudCredential, rancherToken } = sbx();
    const renewed = await sbx().renewCloudCredential();
    assert.notEqual(renewed.name, rancherToken.name);
    assert.equal(renewed.userId, rancherToken.userId);
    const secret = await rancher.admin.get<SecretObject>(Resources.secret, cloudCredential);
    assert.equal(
      Buffer.from(secret.data?.[CREDENTIAL_KEY_KUBECONFIG] ?? '', 'base64').toString(),
      renewed.kubeconfig,
    );
    assert.ok(
      await rancher.admin.get(RancherResources.token, { name: rancherToken.name }),
      'the old token is kept',
    );
  });

  it('grants the driver’s users exactly the driver’s needs', async () => {
    const { kubeconfigs, seeds } = sbx();
    for (const kubeconfig of [kubeconfigs.harvesterDirect, kubeconfigs.harvesterViaRancher]) {
      const client = KubeClient.fromKubeconfig(kubeconfig, {
        retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 },
      });
      try {
        await deny(client.list(Resources.secret, {}));
        await deny(client.list(Resources.secret, { namespace: 'kube-system' }));
        await deny(client.list(Resources.secret, { namespace: seeds.namespace }));
        await deny(
          client.delete(Resources.virtualMachineInstance, { namespace: seeds.namespace, name: 'x' }),
        );
        await deny(client.list(Resources.virtualMachineImage, { namespace: seeds.namespace }));
        await deny(
          client.create(Resources.namespace, {
            apiVersion: 'v1',
            kind: 'Namespace',
            metadata: { name: 'nope' },
          }),
        );
        await deny(client.list(Resources.setting, {}));
        assert.ok(await client.list(Resources.virtualMachine, { namespace: seeds.namespace }));
        assert.ok(await client.list(Resources.pvc, { namespace: seeds.namespace }));
      } finally {
        client.close();
      }
    }
  });

  it('runs a VM the driver’s user creates, and stops and starts it through the proxy', async () => {
    const { seeds } = sbx();
    const fresh = await sbx().newRancherToken({ ttlMs: 3_600_000 });
    const client = KubeClient.fromKubeconfig(fresh.kubeconfig);
    const at = { namespace: seeds.namespace, name: 'sandbox-vm' };
    const vmiState = (phase: string | undefined) => ({
      type: Resources.virtualMachineInstance,
      ...at,
      description: `VMI ${at.name} to be ${phase ?? 'gone'}`,
      timeoutMs: 30_000,
      until: (o: (KubeObject & { status?: { phase?: string } }) | undefined) =>
        phase === undefined ? o === undefined : o?.status?.phase === phase,
      describeState: (o: (KubeObject & { status?: { phase?: string } }) | undefined) =>
        o?.status?.phase ?? 'absent',
    });
    const put = (action: string): Promise<unknown> =>
      client.call({
        method: 'PUT',
        path: resourcePath(
          {
            group: 'subresources.kubevirt.io',
            version: 'v1',
            plural: 'virtualmachines',
            kind: 'VirtualMachine',
            namespaced: true,
          },
          { ...at, subresource: action },
        ),
        operation: `${action} VM ${at.name}`,
      });
    try {
      await client.create(Resources.virtualMachine, {
        apiVersion: 'kubevirt.io/v1',
        kind: 'VirtualMachine',
        metadata: at,
        spec: {
          runStrategy: 'RerunOnFailure',
          // Harvester's VM mutator fails (500) on a VM without domain.cpu (it replaces cpu.maxSockets).
          template: {
            spec: {
              domain: { cpu: { cores: 1 }, devices: {}, resources: { limits: { cpu: '1', memory: '1Gi' } } },
            },
          },
        },
      } as KubeObject);
      await waitFor(client, vmiState('Running'));
      await put('stop');
      await waitFor(client, vmiState(undefined));
      await put('start');
      await waitFor(client, vmiState('Running'));
      await client.delete(Resources.virtualMachine, at, { propagationPolicy: 'Foreground' });
    } finally {
      client.close();
    }
  });
});
