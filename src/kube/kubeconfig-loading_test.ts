import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { parse, stringify } from 'yaml';
import { KubeconfigLoadError, loadKubeconfig, overrideContext } from './kubeconfig-loading.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-kubeconfig-loading-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

function file(name: string, doc: object): string {
  const p = path.join(dir, name);
  fs.mkdirSync(path.dirname(p), { recursive: true });
  fs.writeFileSync(p, stringify(doc));
  return p;
}

const cluster = (name: string, server: string, extra: object = {}) => ({
  name,
  cluster: { server, ...extra },
});
const user = (name: string, u: object) => ({ name, user: u });
const context = (name: string, c: string, u: string) => ({ name, context: { cluster: c, user: u } });

describe('loadKubeconfig: client-go loading rules', () => {
  const first = file('a/first.yaml', {
    clusters: [cluster('shared', 'https://first.example:6443', { 'certificate-authority': 'ca.crt' })],
    users: [user('shared', { token: 'first-token-aaaaaaaa' })],
    contexts: [context('one', 'shared', 'shared')],
    'current-context': 'one',
  });
  const second = file('b/second.yaml', {
    clusters: [cluster('shared', 'https://second.example:6443'), cluster('other', 'https://other.example')],
    users: [
      user('shared', { token: 'second-token-bbbbbbb' }),
      user('files', { 'client-certificate': 'certs/c.crt', 'client-key': '/abs/c.key', 'token-file': 'tok' }),
      user('exec', { exec: { command: './bin/plugin', apiVersion: 'client.authentication.k8s.io/v1' } }),
      user('path-exec', { exec: { command: 'kubelogin', apiVersion: 'client.authentication.k8s.io/v1' } }),
    ],
    contexts: [context('one', 'other', 'files'), context('two', 'other', 'files')],
    'current-context': 'two',
  });
  const noCurrent = file('c/none.yaml', { clusters: [cluster('c', 'https://c.example')] });

  it('merges the $KUBECONFIG list: the first file wins each name and current-context; missing files are skipped', () => {
    const missing = path.join(dir, 'missing.yaml');
    const loaded = loadKubeconfig({
      env: { KUBECONFIG: [missing, noCurrent, first, second].join(path.delimiter) },
    });
    const kc = loaded.kubeConfig;
    assert.equal(kc.getCurrentContext(), 'one', 'first current-context set (none.yaml sets none)');
    assert.equal(kc.getCurrentCluster()?.server, 'https://first.example:6443');
    assert.equal(kc.getCurrentUser()?.token, 'first-token-aaaaaaaa');
    assert.deepEqual(
      kc.getClusters().map((c) => c.name),
      ['c', 'shared', 'other'],
    );
    assert.equal(kc.getContexts().length, 2);
    assert.match(loaded.source, /^\$KUBECONFIG \(/);
    assert.ok(loaded.content && !loaded.content.includes('second-token'), 'the losing user is not kept');
  });

  it('resolves relative paths against the directory of the file that holds them', () => {
    const loaded = loadKubeconfig({ env: { KUBECONFIG: [first, second].join(path.delimiter) } });
    const doc = parse(loaded.content ?? '') as {
      clusters: Array<{ name: string; cluster: Record<string, string> }>;
      users: Array<{ name: string; user: Record<string, unknown> }>;
    };
    assert.equal(
      doc.clusters.find((c) => c.name === 'shared')?.cluster['certificate-authority'],
      path.join(dir, 'a/ca.crt'),
    );
    const files = doc.users.find((u) => u.name === 'files')?.user ?? {};
    assert.equal(files['client-certificate'], path.join(dir, 'b/certs/c.crt'));
    assert.equal(files['client-key'], '/abs/c.key');
    assert.equal(files['token-file'], path.join(dir, 'b/tok'));
    const exec = (u: string) =>
      (doc.users.find((x) => x.name === u)?.user['exec'] as { command: string }).command;
    assert.equal(exec('exec'), path.join(dir, 'b/bin/plugin'));
    assert.equal(exec('path-exec'), 'kubelogin', 'a bare command is found on $PATH');
  });

  it('reads only an explicit file, which must exist, and applies --context', () => {
    const loaded = loadKubeconfig({ explicitPath: second, context: 'one', env: { KUBECONFIG: first } });
    assert.equal(loaded.kubeConfig.getCurrentContext(), 'one');
    assert.equal(loaded.kubeConfig.getCurrentCluster()?.server, 'https://other.example');
    assert.equal(loaded.source, `--kubeconfig ${second}`);
    assert.throws(
      () => loadKubeconfig({ explicitPath: path.join(dir, 'nope.yaml'), env: {} }),
      (err: Error) =>
        err instanceof KubeconfigLoadError &&
        /--kubeconfig .*nope\.yaml: cannot read the file \(ENOENT\)/.test(err.message),
    );
    assert.throws(
      () => loadKubeconfig({ explicitPath: second, context: 'three', env: {} }),
      /--context three: no such context in --kubeconfig .* \(it has one, two\)/,
    );
  });

  it('falls back to ~/.kube/config, and says where it looked when nothing is there', () => {
    const home = path.join(dir, 'home');
    assert.throws(
      () => loadKubeconfig({ env: {}, home }),
      new RegExp(`no kubeconfig: ${home}/\\.kube/config not found`),
    );
    file('home/.kube/config', {
      clusters: [cluster('h', 'https://home.example')],
      contexts: [context('h', 'h', 'h')],
      users: [user('h', {})],
      'current-context': 'h',
    });
    assert.equal(
      loadKubeconfig({ env: {}, home }).kubeConfig.getCurrentCluster()?.server,
      'https://home.example',
    );
  });

  it('refuses a file that names an entry twice, naming the file (as client-go)', () => {
    const dup = file('dup.yaml', { users: [user('u', {}), user('u', {})] });
    assert.throws(
      () => loadKubeconfig({ explicitPath: dup, env: {} }),
      /dup\.yaml: users has two entries named "u"/,
    );
  });

  it('turns a token-file into a file the transport reads again (client-node would read it once, at load)', () => {
    const loaded = loadKubeconfig({ explicitPath: second, context: 'one', env: {} });
    const provider = loaded.kubeConfig.getCurrentUser()?.authProvider as { config: { tokenFile: string } };
    assert.equal(provider.config.tokenFile, path.join(dir, 'b/tok'));
  });

  it('applies --context to inline content', () => {
    const content = fs.readFileSync(second, 'utf8');
    assert.match(overrideContext(content, 'one', 'HARVESTER_KUBECONFIG_CONTENT'), /current-context: one/);
    assert.equal(overrideContext(content, undefined, 'x'), content);
    assert.throws(
      () => overrideContext(content, 'zzz', 'HARVESTER_KUBECONFIG_CONTENT'),
      /no such context in HARVESTER_KUBECONFIG_CONTENT/,
    );
  });
});
