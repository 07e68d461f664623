// The credential story of the second seed (docs/upstream/seeds.md#second-report): a machine
// whose saved kubeconfig has expired is still removed when Rancher passes the renewed
// credential (HARVESTER_KUBECONFIG_CONTENT),
// and without it the removal fails with an error that says what to renew, changing nothing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CredentialRejectedError } from '../src/harvester-access/credential-error.js';
import { ANNOTATION_REMOVED_PVCS } from '../src/harvester/labels.js';
import { Resources, type KubeObject } from '../src/kube/resources.js';
import { expireRancherToken } from '../sandbox/rancher/tokens.js';
import { useSandbox } from './support/sandbox-fixture.js';
import { loadMachine, newMachine, tempStore } from './support/machines.js';
import { livePvcs, vmPvcNames } from './support/volumes.js';
import { untilRejected } from './support/credentials.js';

const fixture = useSandbox();
const store = tempStore();
const ns = 'default';
const b64 = (s: string): string => Buffer.from(s).toString('base64');

async function assertUntouched(name: string, volumes: string[]): Promise<void> {
  const { admin } = fixture.sandbox.harvester;
  const vm = await admin.get<KubeObject>(Resources.virtualMachine, { namespace: ns, name });
  assert.equal(vm.metadata.deletionTimestamp, undefined, 'the VM is not being deleted');
  assert.equal(
    vm.metadata.annotations?.[ANNOTATION_REMOVED_PVCS],
    undefined,
    'nothing was recorded on the VM',
  );
  const live = await livePvcs(admin, ns);
  for (const v of volumes) assert.ok(live.has(v), `volume ${v} untouched`);
}

describe('expired credentials (direct kubeconfig: 401)', () => {
  it('fails with the credential error and changes nothing, then removes with the renewed credential from the environment', async () => {
    const { sandbox } = fixture;
    const user = await sandbox.newDirectUser({ expiresAt: new Date(Date.now() + 3_600_000) });
    const name = 'cred-direct-pool1-7c9e1-aa11';
    const { driver } = newMachine({
      name,
      kubeconfig: user.kubeconfig,
      storePath: store,
      clusterName: 'cred-direct',
    });
    await driver.create();
    const saved = driver.getConfigRaw();
    driver.close();
    const volumes = await vmPvcNames(sandbox.harvester.admin, ns, name);

    await user.setExpiry(new Date(Date.now() - 1_000));
    await untilRejected(user.kubeconfig);

    const stale = loadMachine(saved, { env: {} });
    const err = await stale.driver.remove().then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err instanceof CredentialRejectedError, String(err));
    assert.equal(err.statusCode, 401);
    assert.match(
      err.message,
      /^Harvester credential rejected: list virtualmachines\.kubevirt\.io default: Unauthorized/,
    );
    assert.match(err.message, new RegExp(`bootstrap token ${user.tokenId}, saved in the machine config`));
    assert.match(err.message, /Nothing was changed on Harvester/);
    assert.match(err.message, /renew the Harvester cloud credential in Rancher/);
    assert.match(err.message, /Do not create a new credential/);
    assert.doesNotMatch(err.message, new RegExp(user.token.split('.')[1] ?? 'never'));
    await assertUntouched(name, volumes);

    const renewed = await sandbox.newDirectUser({ expiresAt: new Date(Date.now() + 3_600_000) });
    const fresh = loadMachine(saved, { env: { HARVESTER_KUBECONFIG_CONTENT: b64(renewed.kubeconfig) } });
    assert.equal(fresh.driver.credentialSource, 'env');
    await fresh.driver.remove();
    assert.equal(
      await sandbox.harvester.admin.find(Resources.virtualMachine, { namespace: ns, name }),
      undefined,
    );
    stale.driver.close();
    fresh.driver.close();
  });
});

describe('expired credentials (Rancher kubeconfig: 403 system:unauthenticated)', () => {
  it('fails with the credential error and changes nothing, then removes with the renewed credential from argv', async () => {
    const { sandbox } = fixture;
    const token = await sandbox.newRancherToken({ ttlMs: 3_600_000 });
    const name = 'cred-rancher-pool1-3e5f2-bb22';
    const { driver } = newMachine({
      name,
      kubeconfig: token.kubeconfig,
      storePath: store,
      clusterName: 'cred-rancher',
    });
    await driver.create();
    const saved = driver.getConfigRaw();
    driver.close();
    const volumes = await vmPvcNames(sandbox.harvester.admin, ns, name);

    await expireRancherToken(sandbox.rancher.admin, token.name);

    const stale = loadMachine(saved);
    const err = await stale.driver.remove().then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err instanceof CredentialRejectedError, String(err));
    assert.equal(err.statusCode, 403);
    assert.match(
      err.message,
      new RegExp(
        `clusters\\.management\\.cattle\\.io "${sandbox.clusterId}" is forbidden: User "system:unauthenticated" cannot get resource "clusters" in API group "management\\.cattle\\.io" at the cluster scope`,
      ),
    );
    assert.match(err.message, new RegExp(`Rancher token ${token.name}`));
    await assertUntouched(name, volumes);

    const renewed = await sandbox.newRancherToken({ ttlMs: 3_600_000 });
    const fresh = loadMachine(saved, {
      argv: [
        '/usr/bin/docker-machine-driver-harvester',
        'rancher-machine',
        'rm',
        '-y',
        `--harvester-kubeconfig-content=${b64(renewed.kubeconfig)}`,
        name,
      ],
    });
    assert.equal(fresh.driver.credentialSource, 'argv');
    await fresh.driver.remove();
    assert.equal(
      await sandbox.harvester.admin.find(Resources.virtualMachine, { namespace: ns, name }),
      undefined,
    );
    stale.driver.close();
    fresh.driver.close();
  });
});
