// doctor through the built CLI against the sandbox: it passes for the sandbox's driver
// credential (a direct kubeconfig, and Rancher's cloud credential), and fails with the
// right lines and exit codes for an expired Rancher credential (5), a user without RBAC
// and one with part of it (1), and a kubeconfig whose CA does not match (1).
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { createTokenUser, tokenKubeconfig } from '../sandbox/control-plane/access.js';
import { harvesterCloudCredential, saveHarvesterCloudCredential } from '../sandbox/rancher/credentials.js';
import { expireRancherToken } from '../sandbox/rancher/tokens.js';
import { DRIVER_ACCESS, resourceLabel } from '../src/cli/doctor/required-access.js';
import type { CheckResult } from '../src/cli/doctor/verdicts.js';
import { eventuallyValue } from './support/eventually.js';
import { useSandbox } from './support/sandbox-fixture.js';
import { CliRunner, kubeconfigFile, tempDir } from './cli-harness.js';

const fixture = useSandbox();
const dir = tempDir('hm-cli-doctor-');
const cli = new CliRunner(path.join(dir, 'store'));

const rbacLines = DRIVER_ACCESS.map((need) => `RBAC ${resourceLabel(need)}`);

function line(stdout: string, check: string): string {
  const found = stdout.split('\n').find((l) => l.slice(5).startsWith(`${check}:`));
  assert.ok(found, `a line for ${check} in:\n${stdout}`);
  return found;
}

describe('doctor', () => {
  it('passes for the sandbox credential: direct kubeconfig and Rancher cloud credential', async () => {
    const { sandbox } = fixture;
    const direct = await cli.expect(0, [
      'doctor',
      '--kubeconfig',
      kubeconfigFile(dir, 'direct', sandbox.kubeconfigs.harvesterDirect),
    ]);
    for (const check of ['kubeconfig', 'reachable', 'TLS', 'credential accepted', ...rbacLines]) {
      assert.match(line(direct.stdout, check), /^PASS /, check);
    }
    assert.match(
      line(direct.stdout, 'credential accepted'),
      new RegExp(
        `bootstrap token ${sandbox.directUser.tokenId}: authenticated as system:bootstrap:${sandbox.directUser.tokenId}`,
      ),
    );
    assert.match(line(direct.stdout, 'TLS'), /certificate verified against the kubeconfig's CA/);
    assert.match(line(direct.stdout, 'expiry'), /^INFO expiry: unknown/);
    assert.match(direct.stdout, /All checks passed\.\n$/);
    assert.doesNotMatch(direct.stdout, /[✓✗]/, 'words, not symbols, when stdout is not a terminal');

    const rancher = kubeconfigFile(dir, 'rancher', sandbox.kubeconfigs.rancherLocal);
    const credential = `${sandbox.cloudCredential.namespace}:${sandbox.cloudCredential.name}`;
    const viaRancher = await cli.expect(0, [
      'doctor',
      '--cloud-credential',
      credential,
      '--rancher-kubeconfig',
      rancher,
      '-o',
      'json',
    ]);
    const report = viaRancher.json<{ ok: boolean; exitCode: number; checks: CheckResult[] }>();
    assert.equal(report.ok, true);
    assert.deepEqual(
      report.checks.filter((c) => c.status !== 'pass').map((c) => c.check),
      [],
    );
    const expiry = report.checks.find((c) => c.check === 'expiry');
    assert.match(
      expiry?.detail ?? '',
      /^valid until .*annotation rancher\.io\/expiration-timestamp of cattle-global-data:cc-harvester-sandbox\)$/,
    );
    assert.equal(report.checks.filter((c) => c.check.startsWith('RBAC ')).length, DRIVER_ACCESS.length);
  });

  it('fails with exit code 5 for an expired Rancher cloud credential, saying to renew it', async () => {
    const { sandbox } = fixture;
    const token = await sandbox.newRancherToken({ ttlMs: 3_600_000 });
    const expiredAt = await expireRancherToken(sandbox.rancher.admin, token.name);
    await saveHarvesterCloudCredential(
      sandbox.rancher.admin,
      harvesterCloudCredential({
        name: 'cc-expired',
        kubeconfig: token.kubeconfig,
        clusterId: sandbox.clusterId,
        expiresAt: expiredAt,
      }),
    );
    const rancher = kubeconfigFile(dir, 'rancher', sandbox.kubeconfigs.rancherLocal);
    const result = await cli.expect(5, [
      'doctor',
      '--cloud-credential',
      'cattle-global-data:cc-expired',
      '--rancher-kubeconfig',
      rancher,
    ]);
    const out = result.stdout;
    assert.match(
      line(out, 'cloud credential'),
      /^PASS cloud credential: cattle-global-data:cc-expired in Rancher: a Harvester credential for cluster c-m-sandbox/,
    );
    assert.match(line(out, 'reachable'), /^PASS /);
    assert.match(
      line(out, 'credential accepted'),
      new RegExp(
        `^FAIL credential accepted: Rancher token ${token.name} rejected \\(HTTP 403\\): .*User "system:unauthenticated"`,
      ),
    );
    assert.match(
      line(out, 'expiry'),
      /^FAIL expiry: expired at \S+ \(.* ago\) \(annotation rancher\.io\/expiration-timestamp of cattle-global-data:cc-expired\)/,
    );
    assert.match(
      out,
      /\n {4}fix: renew the cloud credential cattle-global-data:cc-expired in Rancher \(Cluster Management > Cloud Credentials > Renew\); do not create a new credential/,
    );
    assert.match(line(out, 'RBAC'), /^SKIP RBAC: not checked: the credential was not accepted/);
    assert.match(out, /2 check\(s\) failed\.\n$/);
    assert.ok(!out.includes(token.token.split(':')[1] ?? 'never'), 'no token secret in the output');
  });

  it('fails with exit code 1 for a user without RBAC and for one with part of it, naming what to grant', async () => {
    const { sandbox } = fixture;
    const { admin } = sandbox.harvester;
    const kubeconfigOf = (token: string): string =>
      tokenKubeconfig({ name: 'harvester', server: sandbox.proxy.url, caPem: sandbox.proxy.caPem, token });
    const nobody = await createTokenUser(admin, { expiresAt: new Date(Date.now() + 3_600_000) });
    const none = await cli.expect(1, [
      'doctor',
      '--kubeconfig',
      kubeconfigFile(dir, 'nobody', kubeconfigOf(nobody.token)),
    ]);
    assert.match(line(none.stdout, 'credential accepted'), /^PASS /);
    for (const [i, check] of rbacLines.entries()) {
      // The host-device lists only enable a check: denied, they warn.
      assert.match(line(none.stdout, check), DRIVER_ACCESS[i]?.optional ? /^WARN / : /^FAIL /, check);
    }
    assert.match(
      line(none.stdout, 'RBAC virtualmachines.kubevirt.io'),
      /in namespace default: get, list, watch, create, patch, delete denied; needed for create, inspect and remove machines$/,
    );
    assert.match(
      none.stdout,
      new RegExp(
        `\\n    fix: grant to ${nobody.username} the rule \\{apiGroups: \\["subresources\\.kubevirt\\.io"\\], resources: \\["virtualmachines/start", "virtualmachines/stop", "virtualmachines/restart"\\], verbs: \\["update"\\]\\} with a Role and RoleBinding in namespace default`,
      ),
    );
    assert.match(line(none.stdout, 'RBAC settings.harvesterhci.io'), /cluster-wide: get denied/);
    const required = DRIVER_ACCESS.filter((n) => !n.optional).length;
    assert.match(none.stdout, new RegExp(`${required} check\\(s\\) failed\\.\\n$`));

    const readOnly = await createTokenUser(admin, {
      expiresAt: new Date(Date.now() + 3_600_000),
      namespace: 'default',
      rules: [
        { apiGroups: ['kubevirt.io'], resources: ['virtualmachines'], verbs: ['get', 'list', 'watch'] },
      ],
    });
    // New RBAC reaches the authorizer a moment after it is written: ask again until it shows.
    const readOnlyKubeconfig = kubeconfigFile(dir, 'read-only', kubeconfigOf(readOnly.token));
    const partial = await eventuallyValue(
      'doctor to see the read-only role',
      () => cli.expect(1, ['doctor', '--kubeconfig', readOnlyKubeconfig]),
      (r) => /allowed: get/.test(r.stdout),
      10_000,
    );
    assert.match(
      line(partial.stdout, 'RBAC virtualmachines.kubevirt.io'),
      /^FAIL .*create, patch, delete denied \(allowed: get, list, watch\)/,
    );
    assert.match(partial.stdout, /verbs: \["create", "patch", "delete"\]\}/);
  });

  it('fails with exit code 1 when the server certificate does not match the kubeconfig CA', async () => {
    const { sandbox } = fixture;
    const wrongCa = tokenKubeconfig({
      name: 'harvester',
      server: sandbox.proxy.url,
      caPem: sandbox.rancher.caPem,
      token: sandbox.directUser.token,
    });
    const result = await cli.expect(1, ['doctor', '--kubeconfig', kubeconfigFile(dir, 'wrong-ca', wrongCa)]);
    assert.match(line(result.stdout, 'TLS'), /^FAIL TLS: certificate not verified: /);
    assert.match(
      result.stdout,
      /fix: the server's certificate is not signed by the kubeconfig's certificate-authority-data/,
    );
    assert.match(line(result.stdout, 'credential accepted'), /^SKIP /);
  });
});
