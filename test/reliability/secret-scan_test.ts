// The secrets scan that scripts/test.sh runs after the suite finds what it must: a ledger
// secret as written, base64-encoded at any alignment (inside a base64 kubeconfig), a line of a
// PEM key, and secrets nobody recorded but that have a known form; it passes the redacted
// forms our logger writes; it reports where, never the secret; and it exits 1 on a finding.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { redact, registerSecret } from '../../src/log/redact.js';
import { rancherKubeconfig } from '../../src/kube/testing/kubeconfig.js';
import { LEDGER_FILE, base64Fingerprints, scanDirectory } from '../support/secret-scan.js';

const SCANNER = fileURLToPath(new URL('../support/secret-scan.js', import.meta.url));
const dirs: string[] = [];
after(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

/** Fresh secrets for each run (a fixed one in this file would be in the suite's output as source). */
const rancherSecret = crypto.randomBytes(40).toString('hex').slice(0, 54);
const rancherToken = `kubeconfig-u-${crypto.randomBytes(3).toString('hex').slice(0, 5)}:${rancherSecret}`;
const bootstrap = `${crypto.randomBytes(3).toString('hex')}.${crypto.randomBytes(8).toString('hex')}`;
const { privateKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

function scanDir(
  files: Record<string, string>,
  ledger = [{ what: 'Rancher token kubeconfig-u-test', value: rancherToken }],
) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-scan-'));
  dirs.push(dir);
  fs.writeFileSync(path.join(dir, LEDGER_FILE), ledger.map((e) => JSON.stringify(e)).join('\n') + '\n');
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

describe('the secrets scan', () => {
  it('passes clean output and the redacted forms our logger writes', () => {
    registerSecret(rancherToken);
    const redacted = [
      redact(`using ${rancherToken} now`),
      redact(`bootstrap ${bootstrap}`),
      redact(pem),
      redact(`token: ${rancherSecret}`),
      'ok 1 - creates a machine\n# tests 12',
    ].join('\n');
    assert.doesNotMatch(redacted, new RegExp(rancherSecret));
    const result = scanDirectory(scanDir({ 'runner-output.tap': redacted }));
    assert.deepEqual(result.findings, []);
    assert.ok(result.secrets >= 4, 'the secret and its three base64 alignments');
  });

  it('finds a ledger secret, where it is, without repeating it', () => {
    const dir = scanDir({ 'captured/123.log': `line one\n[driver log] token is ${rancherToken}\n` });
    const { findings } = scanDirectory(dir);
    assert.ok(findings.length >= 1);
    assert.deepEqual(
      { file: findings[0]?.file, line: findings[0]?.line, what: findings[0]?.what },
      { file: path.join('captured', '123.log'), line: 2, what: 'Rancher token kubeconfig-u-test' },
    );
    for (const f of findings)
      assert.ok(!f.hint.includes(rancherSecret.slice(0, 12)), 'the hint masks the value');
  });

  it('finds it base64-encoded at every alignment, as in a base64 kubeconfig', () => {
    assert.equal(base64Fingerprints(rancherToken).length, 3);
    for (const prefix of ['', 'a', 'ab']) {
      const kubeconfig = prefix + rancherKubeconfig({ token: rancherToken });
      const encoded = Buffer.from(kubeconfig).toString('base64');
      const { findings } = scanDirectory(scanDir({ 'out.log': `HARVESTER_KUBECONFIG_CONTENT=${encoded}\n` }));
      assert.ok(
        findings.some((f) => f.what === 'Rancher token kubeconfig-u-test (base64)'),
        `alignment ${prefix.length}`,
      );
    }
  });

  it('finds unrecorded secrets by their form: Rancher and bootstrap tokens, PEM keys plain and base64', () => {
    const unrecorded = {
      'a.log': `Authorization: Bearer ${rancherToken}\n`,
      'b.log': `joined with ${bootstrap}\n`,
      'c.log': pem,
      'd.log': `client-key-data: ${Buffer.from(pem).toString('base64')}\n`,
    };
    const { findings } = scanDirectory(scanDir(unrecorded, []));
    const byFile = new Map(findings.map((f) => [f.file, f.what]));
    assert.equal(byFile.get('a.log'), 'a Rancher token (name:secret)');
    assert.equal(byFile.get('b.log'), 'a bootstrap token (id.secret)');
    assert.equal(byFile.get('c.log'), 'a PEM private key');
    assert.equal(byFile.get('d.log'), 'a PEM private key (base64)');
  });

  it('as a command: exit 0 when clean, 1 with the findings on stderr (masked), 2 without a directory', () => {
    const clean = spawnSync(process.execPath, [SCANNER, scanDir({ 'out.log': 'nothing here\n' })], {
      encoding: 'utf8',
    });
    assert.equal(clean.status, 0, clean.stderr);
    assert.match(
      clean.stdout,
      /^secrets scan: clean: \d+ secret forms from the ledger and 3 patterns, in 1 files/,
    );
    const leaked = spawnSync(process.execPath, [SCANNER, scanDir({ 'out.log': `oops ${rancherToken}\n` })], {
      encoding: 'utf8',
    });
    assert.equal(leaked.status, 1);
    assert.match(leaked.stderr, /secrets scan: FAILED: \d+ secret\(s\) in the suite's output/);
    assert.match(leaked.stderr, /out\.log:1: Rancher token kubeconfig-u-test: /);
    assert.ok(!leaked.stderr.includes(rancherSecret), 'the report never repeats the secret');
    assert.equal(spawnSync(process.execPath, [SCANNER], { encoding: 'utf8' }).status, 2);
  });
});
