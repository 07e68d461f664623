import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DRIVER_ACCESS } from './required-access.js';
import {
  accessVerdict,
  doctorExitCode,
  expiryVerdict,
  reachabilityVerdict,
  renderCheck,
  tlsVerdict,
  tokenVerdict,
  type CheckResult,
} from './verdicts.js';

const NOW = new Date('2025-06-01T12:00:00Z');
const vms = DRIVER_ACCESS[0];
const subresources = DRIVER_ACCESS.find((n) => n.subresources);
const rancherCredential = { cloudCredential: 'cattle-global-data:cc-abc12', viaRancher: true };

describe('doctor verdicts', () => {
  it('reachability and TLS', () => {
    const ok = { server: 'https://h', answered: true, statusCode: 401 };
    assert.equal(reachabilityVerdict(ok).status, 'pass');
    assert.equal(tlsVerdict(ok, { https: true, skipVerify: false, hasCa: true }).status, 'pass');
    assert.equal(tlsVerdict(ok, { https: true, skipVerify: true, hasCa: false }).status, 'warn');
    assert.equal(tlsVerdict(ok, { https: false, skipVerify: false, hasCa: false }).status, 'warn');
    const refused = { server: 'https://h', answered: false, error: 'ECONNREFUSED' };
    assert.equal(reachabilityVerdict(refused).status, 'fail');
    assert.equal(tlsVerdict(refused, { https: true, skipVerify: false, hasCa: true }).status, 'skip');
    const badCert = {
      server: 'https://h',
      answered: false,
      tlsError: true,
      error: 'unable to verify the first certificate',
    };
    assert.equal(reachabilityVerdict(badCert).status, 'pass');
    const tls = tlsVerdict(badCert, { https: true, skipVerify: false, hasCa: true });
    assert.equal(tls.status, 'fail');
    assert.match(tls.fix ?? '', /certificate-authority-data/);
  });

  it('the credential: accepted, anonymous, rejected (with the renew advice for where it came from)', () => {
    assert.equal(
      tokenVerdict(
        { result: 'accepted', username: 'u-abc', groups: [] },
        'Rancher token t',
        rancherCredential,
      ).status,
      'pass',
    );
    const anonymous = tokenVerdict({ result: 'accepted', username: 'system:anonymous', groups: [] }, 'x', {
      viaRancher: false,
    });
    assert.equal(anonymous.status, 'fail');
    const rejected = tokenVerdict(
      { result: 'rejected', error: 'Unauthorized', statusCode: 401 },
      'bootstrap token abc',
      rancherCredential,
    );
    assert.deepEqual([rejected.status, rejected.credential], ['fail', true]);
    assert.match(rejected.detail, /^bootstrap token abc rejected \(HTTP 401\): Unauthorized$/);
    assert.match(rejected.fix ?? '', /^renew the cloud credential cattle-global-data:cc-abc12 in Rancher/);
    assert.match(
      tokenVerdict({ result: 'rejected', error: 'x' }, 'y', { viaRancher: false }).fix ?? '',
      /Support > Download KubeConfig/,
    );
  });

  it('expiry: the first source that knows decides; expired fails, soon warns, unknown informs', () => {
    const day = 86_400_000;
    const at = (ms: number) => new Date(NOW.getTime() + ms);
    const expired = expiryVerdict(
      [
        { source: 'annotation', expiresAt: at(-2 * day) },
        { source: 'token', expiresAt: at(day) },
      ],
      rancherCredential,
      NOW,
    );
    assert.deepEqual([expired.status, expired.credential], ['fail', true]);
    assert.match(expired.detail, /^expired at 2025-05-30T12:00:00\.000Z \(2 days ago\) \(annotation\)$/);
    assert.equal(
      expiryVerdict([{ source: 's', expiresAt: at(2 * day) }], rancherCredential, NOW).status,
      'warn',
    );
    assert.match(
      expiryVerdict([{ source: 's', expiresAt: at(30 * day) }], rancherCredential, NOW).detail,
      /in 30 days/,
    );
    assert.equal(
      expiryVerdict([{ source: 'Rancher token t', expiresAt: null }], rancherCredential, NOW).detail,
      'never expires (Rancher token t)',
    );
    assert.equal(expiryVerdict([], rancherCredential, NOW).status, 'info');
  });

  it('RBAC: one line per resource, the denied verbs and the rule to grant', () => {
    assert.ok(vms && subresources);
    const allowed = accessVerdict(
      vms,
      vms.verbs.map((verb) => ({ verb, allowed: true })),
      { namespace: 'ns1', viaRancher: false },
    );
    assert.equal(allowed.status, 'pass');
    const partial = accessVerdict(
      vms,
      vms.verbs.map((verb) => ({ verb, allowed: verb !== 'delete' })),
      {
        namespace: 'ns1',
        username: 'system:bootstrap:abc123',
        viaRancher: false,
      },
    );
    assert.equal(partial.status, 'fail');
    assert.match(
      partial.detail,
      /^in namespace ns1: delete denied \(allowed: get, list, watch, create, patch\); needed for/,
    );
    assert.equal(
      partial.fix,
      'grant to system:bootstrap:abc123 the rule {apiGroups: ["kubevirt.io"], resources: ["virtualmachines"], verbs: ["delete"]} with a Role and RoleBinding in namespace ns1',
    );
    const sub = accessVerdict(subresources, [{ verb: 'update', subresource: 'stop', allowed: false }], {
      namespace: 'ns1',
      viaRancher: true,
    });
    assert.match(sub.detail, /update virtualmachines\/stop denied/);
    assert.match(
      sub.fix ?? '',
      /"virtualmachines\/start", "virtualmachines\/stop", "virtualmachines\/restart"/,
    );
    assert.match(sub.fix ?? '', /through Rancher/);
    const broken = accessVerdict(vms, [{ verb: 'get', allowed: false, error: 'timeout' }], {
      namespace: 'ns1',
      viaRancher: false,
    });
    assert.match(broken.detail, /could not ask \(timeout\)/);
  });

  it('RBAC: a denied optional list (the host-device check) is a warning with the rule to grant', () => {
    const pciDevices = DRIVER_ACCESS.find((n) => n.resource === 'pcidevices');
    assert.ok(pciDevices?.optional);
    const denied = accessVerdict(pciDevices, [{ verb: 'list', allowed: false }], {
      namespace: 'ns1',
      viaRancher: true,
    });
    assert.equal(denied.status, 'warn');
    assert.match(
      denied.detail,
      /^cluster-wide: list denied; needed for the pre-create check of --harvester-host-device-info/,
    );
    assert.match(
      denied.fix ?? '',
      /\{apiGroups: \["devices\.harvesterhci\.io"\], resources: \["pcidevices"\], verbs: \["list"\]\} with a ClusterRole/,
    );
  });

  it('renders ✓/✗ on a terminal, PASS/FAIL otherwise, with the fix under failures; exit codes', () => {
    const failed: CheckResult = { check: 'TLS', status: 'fail', detail: 'bad', fix: 'do this' };
    assert.deepEqual(renderCheck(failed, true), ['✗ TLS: bad', '    fix: do this']);
    assert.deepEqual(renderCheck(failed, false), ['FAIL TLS: bad', '    fix: do this']);
    assert.deepEqual(renderCheck({ check: 'x', status: 'pass', detail: 'ok', fix: 'unused' }, false), [
      'PASS x: ok',
    ]);
    assert.equal(
      doctorExitCode([
        { check: 'a', status: 'pass', detail: '' },
        { check: 'b', status: 'warn', detail: '' },
      ]),
      0,
    );
    assert.equal(doctorExitCode([failed]), 1);
    assert.equal(doctorExitCode([failed, { ...failed, credential: true }]), 5);
  });
});
