// Credential content is someone else's input: every field that names a file, a command or a
// proxy is refused before a file is read, a process started or a connection made, naming
// the field; the operator's own content keeps client-go's rules.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import { KubeClient } from './client.js';
import { CredentialContentError, credentialContentProblems } from './credential-content.js';
import { kubeconfigProblems } from './kubeconfig-content.js';
import { setTripwires, type Tripwires } from './testing/tripwires.js';

let wires: Tripwires;
before(async () => {
  wires = await setTripwires();
});
after(() => wires.close());

/** A kubeconfig whose server is the tripwire, with `user` and `cluster` fields added. */
function kubeconfig(user: Record<string, unknown>, cluster: Record<string, unknown> = {}): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'h', cluster: { server: wires.url, 'insecure-skip-tls-verify': true, ...cluster } }],
    users: [{ name: 'h', user: { ...user } }],
    contexts: [{ name: 'h', context: { cluster: 'h', user: 'h' } }],
    'current-context': 'h',
  });
}

const HOSTILE: Array<[string, () => string, string]> = [
  [
    'token-file',
    () => kubeconfig({ 'token-file': wires.files.token }),
    'users[0].user.token-file names a file',
  ],
  ['tokenFile', () => kubeconfig({ tokenFile: wires.files.token }), 'users[0].user.tokenFile names a file'],
  [
    'client-certificate and client-key',
    () => kubeconfig({ 'client-certificate': wires.files.cert, 'client-key': wires.files.key }),
    'users[0].user.client-certificate names a file to read; users[0].user.client-key names a file',
  ],
  [
    'exec',
    () => kubeconfig({ exec: { apiVersion: 'client.authentication.k8s.io/v1', command: wires.command } }),
    'users[0].user.exec runs a command',
  ],
  [
    'Exec (any letter case)',
    () => kubeconfig({ Exec: { command: wires.command } }),
    'users[0].user.Exec runs a command',
  ],
  [
    'auth-provider gcp (a shell command)',
    () => kubeconfig({ 'auth-provider': { name: 'gcp', config: { 'cmd-path': wires.command } } }),
    'users[0].user.auth-provider runs an auth-provider plugin',
  ],
  [
    'auth-provider oidc (a refresh at the issuer)',
    () =>
      kubeconfig({
        'auth-provider': { name: 'oidc', config: { 'idp-issuer-url': wires.url, 'refresh-token': 'r' } },
      }),
    'users[0].user.auth-provider runs',
  ],
  [
    'certificate-authority',
    () => kubeconfig({ token: 't' }, { 'certificate-authority': wires.files.ca }),
    'clusters[0].cluster.certificate-authority names a file',
  ],
  [
    'proxy-url',
    () => kubeconfig({ token: 't' }, { 'proxy-url': wires.url }),
    'clusters[0].cluster.proxy-url chooses the proxy',
  ],
];

describe('credential content: inline credentials only', () => {
  for (const [what, make, expected] of HOSTILE) {
    it(`refuses ${what} before anything is read, run or sent, naming the field`, async () => {
      const text = make();
      assert.throws(
        () => KubeClient.fromKubeconfig(text),
        (err: unknown) =>
          err instanceof CredentialContentError &&
          err.message.includes(expected) &&
          err.message.includes('as the ones Rancher makes do'),
      );
      const problems = kubeconfigProblems(text).join('; ');
      assert.ok(problems.includes(expected), problems);
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(wires.connections(), 0);
      assert.deepEqual(wires.readFiles(), []);
      assert.equal(wires.ran(), false);
    });
  }

  it('names no value of the content in its message', () => {
    const text = kubeconfig({ exec: { command: '/secret/place/ünïcödé' }, 'token-file': '/另一个/path' });
    const message = kubeconfigProblems(text).join('; ');
    assert.ok(!message.includes('/secret/place') && !message.includes('另一个'), message);
  });

  it('accepts what Rancher makes: token, CA data; and client certificate data, basic auth, empty path fields', () => {
    const doc = (user: Record<string, unknown>, cluster: Record<string, unknown> = {}) => ({
      clusters: [
        {
          name: 'h',
          cluster: {
            server: 'https://r/k8s/clusters/c-m-1',
            'certificate-authority-data': 'Q0E=',
            ...cluster,
          },
        },
      ],
      users: [{ name: 'h', user }],
    });
    assert.deepEqual(credentialContentProblems(doc({ token: 'kubeconfig-user-x:y' })), []);
    assert.deepEqual(
      credentialContentProblems(doc({ 'client-certificate-data': 'Yw==', 'client-key-data': 'aw==' })),
      [],
    );
    assert.deepEqual(credentialContentProblems(doc({ username: 'u', password: 'p' })), []);
    assert.deepEqual(
      credentialContentProblems(doc({ token: 't', 'token-file': '', exec: null }, { 'proxy-url': '' })),
      [],
    );
  });

  it("keeps client-go's rules for the operator's own content", () => {
    const text = kubeconfig({ 'token-file': wires.files.token });
    const client = KubeClient.fromKubeconfig(text, { trust: 'operator' });
    client.close();
    assert.deepEqual(kubeconfigProblems(text, 'operator'), []);
  });
});
