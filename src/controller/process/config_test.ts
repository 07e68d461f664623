import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, parseConfig, parseDuration } from './config.js';

describe('parseDuration', () => {
  it('reads Go-like durations and plain seconds', () => {
    assert.equal(parseDuration('90s'), 90_000);
    assert.equal(parseDuration('1h30m'), 5_400_000);
    assert.equal(parseDuration('7d'), 604_800_000);
    assert.equal(parseDuration('1500ms'), 1500);
    assert.equal(parseDuration('45'), 45_000);
    assert.throws(() => parseDuration('soon'), ConfigError);
    assert.throws(() => parseDuration('5 minutes'), ConfigError);
  });
});

describe('parseConfig', () => {
  it('has safe defaults: fleet-default, 127.0.0.1 metrics, leader election on, 30 min deadline', () => {
    const c = parseConfig([], {});
    assert.deepEqual(c.namespaces, ['fleet-default']);
    assert.equal(c.metricsBindAddress, '127.0.0.1:8080');
    assert.equal(c.leaderElection.enabled, true);
    assert.equal(c.gateDeadlineMs, 1_800_000);
    assert.equal(c.hookName, 'harvester-machine-cleanup');
    assert.equal(c.kubeconfigPath, undefined);
    assert.equal(c.guestVolumes, 'watch');
  });
  it('records guest volumes as told, and refuses a mode it has not', () => {
    assert.equal(
      parseConfig(['--guest-volumes', 'at-deletion'], { GUEST_VOLUMES: 'off' }).guestVolumes,
      'at-deletion',
    );
    assert.equal(parseConfig([], { GUEST_VOLUMES: 'off' }).guestVolumes, 'off');
    assert.throws(
      () => parseConfig(['--guest-volumes', 'poll'], {}),
      /--guest-volumes: "poll" is not watch, at-deletion, off/,
    );
  });
  it("takes a guest's budget of PVs from the flag or GUEST_MAX_VOLUMES, and refuses one that is no count", () => {
    assert.equal(parseConfig([], {}).guestMaxVolumes, 2_000);
    assert.equal(
      parseConfig(['--guest-max-volumes', '500'], { GUEST_MAX_VOLUMES: '9' }).guestMaxVolumes,
      500,
    );
    assert.equal(parseConfig([], { GUEST_MAX_VOLUMES: '9' }).guestMaxVolumes, 9);
    for (const bad of ['0', '-1', '2.5', 'lots', '100000'])
      assert.throws(
        () => parseConfig(['--guest-max-volumes', bad], {}),
        /--guest-max-volumes: ".*" is not a whole number from 1 to 50000/,
        bad,
      );
  });
  it('lets flags win over the environment', () => {
    const c = parseConfig(['--gate-deadline', '2m', '--namespace', 'a', '--namespace', 'b,c'], {
      GATE_DEADLINE: '1h',
      WATCH_NAMESPACES: 'x',
    });
    assert.equal(c.gateDeadlineMs, 120_000);
    assert.deepEqual(c.namespaces, ['a', 'b', 'c']);
  });
  it('reads the environment the Helm chart sets', () => {
    const c = parseConfig([], {
      WATCH_NAMESPACES: '*',
      POD_NAMESPACE: 'hm',
      POD_NAME: 'hm-0',
      LEADER_ELECT: 'false',
    });
    assert.deepEqual(c.namespaces, []);
    assert.equal(c.leaderElection.namespace, 'hm');
    assert.equal(c.statusConfigMap.namespace, 'hm');
    assert.equal(c.identity, 'hm-0');
    assert.equal(c.leaderElection.enabled, false);
  });
  it('rejects what it cannot use, naming the flag', () => {
    assert.throws(() => parseConfig(['--hook-name', 'Bad Name'], {}), /--hook-name/);
    assert.throws(() => parseConfig(['--log-level', 'loud'], {}), /--log-level/);
    assert.throws(() => parseConfig(['--nope'], {}), ConfigError);
  });
});

describe('credential selectors', () => {
  it('takes label and field selectors from flags or the environment', () => {
    const c = parseConfig(['--credential-label-selector', 'harvester-machine.io/credential=true'], {
      CREDENTIAL_FIELD_SELECTOR: 'type=provisioning.cattle.io/cloud-credential',
    });
    assert.equal(c.credentialLabelSelector, 'harvester-machine.io/credential=true');
    assert.equal(c.credentialFieldSelector, 'type=provisioning.cattle.io/cloud-credential');
    assert.equal(parseConfig([], {}).credentialLabelSelector, undefined);
  });
  it('accepts what the apiserver accepts', () => {
    for (const s of ['a', '!a', 'a=b', 'a==b', 'a!=b', 'x.io/a in (b, c),d notin (e)', 'a=', 'team,x.io/y=z'])
      assert.doesNotThrow(() => parseConfig(['--credential-label-selector', s], {}), s);
    for (const s of ['type=Opaque', 'metadata.name!=cc-1,type==x'])
      assert.doesNotThrow(() => parseConfig(['--credential-field-selector', s], {}), s);
  });
  it('refuses, naming the flag, a selector the apiserver would answer with 400 on every list', () => {
    for (const [flag, s, why] of [
      ['--credential-label-selector', 'a b', /is not a requirement/],
      ['--credential-label-selector', 'a=,', /empty requirement/],
      ['--credential-label-selector', 'Bad_Prefix/x=1', /prefix before "\/" is not a DNS subdomain/],
      ['--credential-label-selector', `a=${'x'.repeat(64)}`, /is not a label value/],
      ['--credential-field-selector', 'data.kubeconfig=x', /cannot select Secrets \(only metadata.name/],
      ['--credential-field-selector', 'type', /is not a requirement/],
    ] as const)
      assert.throws(
        () => parseConfig([flag, s], {}),
        (err: Error) => {
          assert.ok(err instanceof ConfigError);
          assert.match(err.message, new RegExp(`^${flag}: `));
          assert.match(err.message, why);
          return true;
        },
      );
  });
});
