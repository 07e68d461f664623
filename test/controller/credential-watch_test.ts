// What the controller's credential watch receives, on a real apiserver, from a credential
// namespace holding Rancher's credentials of several drivers (docs/upstream/rancher.md#cloud-credentials):
// - with a label selector, only the labelled Harvester credentials ever reach the process;
// - the dashboard's Secret type `provisioning.cattle.io/cloud-credential` selects every
//   driver's credentials and misses those created through the API or Terraform (Opaque), so
//   it is no Harvester filter and not a safe default;
// - RBAC cannot narrow by label: a Role restricted by resourceNames allows a list or watch
//   only with a metadata.name field selector for an allowed name.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KubeClient, KubeError, Manager, type Cache } from '../../src/kube/index.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { silentLogger } from '../../src/log/logger.js';
import { slimSecret } from '../../src/controller/common/cache-transforms.js';
import type { SecretObject } from '../../src/controller/common/types.js';
import {
  CLOUD_CREDENTIAL_NAMESPACE as NS,
  CREDENTIAL_KEY_KUBECONFIG,
} from '../../src/rancher/cloud-credential.js';
import { createTokenUser, tokenKubeconfig } from '../../sandbox/control-plane/access.js';
import { useControlPlane } from '../support/control-plane-fixture.js';
import { eventually } from '../support/eventually.js';

const fixture = useControlPlane({ name: 'cred-watch', crds: false, controllerManager: false });
const LABEL = 'harvester-machine.io/credential';
const DASHBOARD_TYPE = 'provisioning.cattle.io/cloud-credential';

const b64 = (s: string): string => Buffer.from(s).toString('base64');
const secret = (
  name: string,
  opts: { data: Record<string, string>; type?: string; labels?: Record<string, string>; driver?: string },
): KubeObject =>
  ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name,
      namespace: NS,
      labels: { 'cattle.io/creator': 'norman', ...opts.labels },
      ...(opts.driver ? { annotations: { 'provisioning.cattle.io/driver': opts.driver } } : {}),
    },
    ...(opts.type ? { type: opts.type } : {}),
    data: Object.fromEntries(Object.entries(opts.data).map(([k, v]) => [k, b64(v)])),
  }) as KubeObject;

const harvester = { [CREDENTIAL_KEY_KUBECONFIG]: 'apiVersion: v1\nkind: Config\n' };
const aws = {
  'amazonec2credentialConfig-accessKey': 'AKIAEXAMPLEEXAMPLE',
  'amazonec2credentialConfig-secretKey': 'aws-secret-key-never-to-be-read-0123',
};

/** The credential cache as the controller builds it, recording every Secret the apiserver sent. */
async function watchCredentials(
  client: KubeClient,
  selectors: { labelSelector?: string; fieldSelector?: string },
): Promise<{ cache: Cache<SecretObject>; received: Set<string>; stop: () => Promise<void> }> {
  const received = new Set<string>();
  const manager = new Manager({ client, logger: silentLogger });
  const cache = manager.cache<SecretObject>({
    type: Resources.secret,
    namespaces: [NS],
    ...selectors,
    transform: (o) => {
      received.add(o.metadata.name);
      return slimSecret(o);
    },
  });
  await manager.start();
  return { cache, received, stop: () => manager.stop() };
}

describe('the credential watch', () => {
  it('receives only what its selector selects, and a Secret type is no Harvester filter', async () => {
    const { admin } = fixture.cp;
    await admin.create(Resources.namespace, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    // As the dashboard, the API (Terraform) and an operator who labelled theirs would leave them.
    await admin.create(
      Resources.secret,
      secret('cc-dash-harv', { data: harvester, type: DASHBOARD_TYPE, driver: 'harvester' }),
    );
    await admin.create(Resources.secret, secret('cc-tf-harv', { data: harvester }));
    await admin.create(
      Resources.secret,
      secret('cc-labelled-harv', { data: harvester, type: DASHBOARD_TYPE, labels: { [LABEL]: 'true' } }),
    );
    await admin.create(
      Resources.secret,
      secret('cc-dash-aws', { data: aws, type: DASHBOARD_TYPE, driver: 'aws' }),
    );
    await admin.create(Resources.secret, secret('cc-tf-aws', { data: aws }));

    const all = await watchCredentials(admin, {});
    const byLabel = await watchCredentials(admin, { labelSelector: `${LABEL}=true` });
    const byType = await watchCredentials(admin, { fieldSelector: `type=${DASHBOARD_TYPE}` });
    try {
      assert.deepEqual(
        [...all.received].sort(),
        ['cc-dash-aws', 'cc-dash-harv', 'cc-labelled-harv', 'cc-tf-aws', 'cc-tf-harv'],
        'unselected, every credential is sent',
      );
      assert.equal(
        all.cache.get({ namespace: NS, name: 'cc-tf-aws' })?.data,
        undefined,
        'and kept without its data',
      );
      assert.deepEqual([...byLabel.received], ['cc-labelled-harv']);
      assert.deepEqual(
        [...byType.received].sort(),
        ['cc-dash-aws', 'cc-dash-harv', 'cc-labelled-harv'],
        "the dashboard's type selects AWS too, and misses the Harvester credential made through the API",
      );

      // The watch keeps to the selector: a new AWS credential is never sent, a newly labelled one is.
      await admin.create(Resources.secret, secret('cc-late-aws', { data: aws, type: DASHBOARD_TYPE }));
      await admin.patch(
        Resources.secret,
        { namespace: NS, name: 'cc-tf-harv' },
        { metadata: { labels: { [LABEL]: 'true' } } },
      );
      await eventually('the newly labelled credential in the cache', () =>
        Promise.resolve(byLabel.cache.get({ namespace: NS, name: 'cc-tf-harv' }) !== undefined),
      );
      await eventually('the new AWS credential in the unselected cache', () =>
        Promise.resolve(all.cache.get({ namespace: NS, name: 'cc-late-aws' }) !== undefined),
      );
      assert.deepEqual([...byLabel.received].sort(), ['cc-labelled-harv', 'cc-tf-harv']);
    } finally {
      await Promise.all([all.stop(), byLabel.stop(), byType.stop()]);
    }
  });

  it('RBAC cannot narrow by label; resourceNames allows list and watch by metadata.name only', async () => {
    const { cp } = fixture;
    const user = await createTokenUser(cp.admin, {
      expiresAt: new Date(Date.now() + 3_600_000),
      namespace: NS,
      rules: [
        {
          apiGroups: [''],
          resources: ['secrets'],
          verbs: ['list', 'watch'],
          resourceNames: ['cc-labelled-harv'],
        },
      ],
    });
    const client = KubeClient.fromKubeconfig(
      tokenKubeconfig({ name: 'narrow', server: cp.server, caPem: cp.caPem, token: user.token }),
      { retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 } },
    );
    const kind = (p: Promise<unknown>): Promise<string> =>
      p.then(
        () => 'allowed',
        (err: unknown) => (err instanceof KubeError ? err.kind : String(err)),
      );
    try {
      assert.equal(await kind(client.list(Resources.secret, { namespace: NS })), 'Forbidden');
      assert.equal(
        await kind(client.list(Resources.secret, { namespace: NS, labelSelector: `${LABEL}=true` })),
        'Forbidden',
      );
      assert.equal(
        await kind(
          client.list(Resources.secret, { namespace: NS, fieldSelector: 'metadata.name=cc-dash-aws' }),
        ),
        'Forbidden',
      );
      assert.equal(
        await kind(
          client.list(Resources.secret, { namespace: NS, fieldSelector: 'metadata.name=cc-labelled-harv' }),
        ),
        'allowed',
      );
      const one = await watchCredentials(client, { fieldSelector: 'metadata.name=cc-labelled-harv' });
      assert.deepEqual([...one.received], ['cc-labelled-harv'], 'a watch by name is allowed too');
      await one.cache.stop();
    } finally {
      client.close();
    }
  });
});
