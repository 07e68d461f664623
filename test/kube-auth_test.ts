// Every way a kubeconfig can authenticate and reach the apiserver, through the one client,
// against a real kube-apiserver (basic auth against a loopback server: kube-apiserver dropped
// it in 1.19): bearer token, token file re-read when it rotates, client certificate and CA
// as files with relative paths, exec plugin, tls-server-name, an IPv6 server, the merged
// $KUBECONFIG list and --context, and the pod's service account with a rotating token.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import { rancherKubeconfig } from '../src/controller/process/rancher-kubeconfig.js';
import { KubeClient } from '../src/kube/client.js';
import { isCredentialRejected, isKubeError } from '../src/kube/errors.js';
import { loadKubeconfig, SERVICE_ACCOUNT_DIR } from '../src/kube/kubeconfig-loading.js';
import { Resources, type KubeObject } from '../src/kube/resources.js';
import { startControlPlane, type ControlPlane } from '../sandbox/control-plane/control-plane.js';
import { issueCert } from '../sandbox/control-plane/pki.js';
import { recordSecret } from '../sandbox/secret-ledger.js';
import { createTokenUser, type TokenUser } from '../sandbox/control-plane/access.js';
import { useControlPlane } from './support/control-plane-fixture.js';

const ONE_TRY = { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 };
const fixture = useControlPlane({ name: 'auth', crds: false, controllerManager: false });
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-kube-auth-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

const b64 = (s: string): string => Buffer.from(s).toString('base64');

function kubeconfig(clusterFields: Record<string, unknown>, userFields: Record<string, unknown>): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'c',
        cluster: {
          server: fixture.cp.server,
          'certificate-authority-data': b64(fixture.cp.caPem),
          ...clusterFields,
        },
      },
    ],
    users: [{ name: 'u', user: userFields }],
    contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
    'current-context': 'c',
  });
}

/** Who the apiserver takes the client for (SelfSubjectReview). */
async function whoami(client: KubeClient): Promise<string> {
  const review = await client.call<{ status?: { userInfo?: { username?: string } } }>({
    method: 'POST',
    path: '/apis/authentication.k8s.io/v1/selfsubjectreviews',
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    operation: 'create selfsubjectreview',
  });
  return review.status?.userInfo?.username ?? '';
}

async function whoamiWith(content: string): Promise<string> {
  // The operator's own kubeconfig: client-go's rules, token files and exec plugins too.
  const client = KubeClient.fromKubeconfig(content, { retry: ONE_TRY, trust: 'operator' });
  try {
    return await whoami(client);
  } finally {
    client.close();
  }
}

/** Replaces a file as kubelet does a projected token: write aside, then rename over it. */
function rotate(file: string, content: string): void {
  fs.writeFileSync(`${file}.new`, content);
  fs.renameSync(`${file}.new`, file);
}

async function serviceAccountToken(cp: ControlPlane, name: string): Promise<string> {
  await cp.admin.create<KubeObject>(Resources.serviceAccount, {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name, namespace: 'default' },
  });
  const answer = await cp.admin.call<{ status: { token: string } }>({
    method: 'POST',
    path: `/api/v1/namespaces/default/serviceaccounts/${name}/token`,
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } },
    operation: `create token for serviceaccount default/${name}`,
  });
  recordSecret(`service account token ${name}`, answer.status.token);
  return answer.status.token;
}

describe('authentication methods against kube-apiserver', () => {
  let alice: TokenUser;
  let bob: TokenUser;
  before(async () => {
    const expiresAt = new Date(Date.now() + 3_600_000);
    alice = await createTokenUser(fixture.cp.admin, { expiresAt });
    bob = await createTokenUser(fixture.cp.admin, { expiresAt });
  });

  it('bearer token', async () => {
    assert.equal(await whoamiWith(kubeconfig({}, { token: alice.token })), alice.username);
  });

  it('token file, read again as soon as it rotates (no minute-long cache)', async () => {
    const tokenFile = path.join(dir, 'token');
    fs.writeFileSync(tokenFile, `${alice.token}\n`);
    const client = KubeClient.fromKubeconfig(kubeconfig({}, { 'token-file': tokenFile }), {
      retry: ONE_TRY,
      trust: 'operator',
    });
    try {
      assert.equal(await whoami(client), alice.username, 'a trailing newline is not part of the token');
      rotate(tokenFile, bob.token);
      assert.equal(await whoami(client), bob.username);
      assert.match(client.credential.identity ?? '', new RegExp(`token file ${tokenFile}`));
    } finally {
      client.close();
    }
  });

  it('client certificate, key and CA as files, relative to the kubeconfig file', async () => {
    const certDir = path.join(dir, 'certs');
    fs.mkdirSync(certDir, { recursive: true });
    const cert = await issueCert(fixture.cp.pki, 'alice-files', { commonName: 'alice-by-cert' }, 'client');
    fs.copyFileSync(cert.certPath, path.join(certDir, 'client.crt'));
    fs.copyFileSync(cert.keyPath, path.join(certDir, 'client.key'));
    fs.writeFileSync(path.join(certDir, 'ca.crt'), fixture.cp.caPem);
    const file = path.join(dir, 'by-files.yaml');
    fs.writeFileSync(
      file,
      stringify({
        clusters: [
          { name: 'c', cluster: { server: fixture.cp.server, 'certificate-authority': 'certs/ca.crt' } },
        ],
        users: [
          { name: 'u', user: { 'client-certificate': 'certs/client.crt', 'client-key': 'certs/client.key' } },
        ],
        contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
        'current-context': 'c',
      }),
    );
    // From another working directory: the paths are the file's, not the process's.
    const client = KubeClient.fromLoaded(loadKubeconfig({ explicitPath: file, env: {} }), { retry: ONE_TRY });
    try {
      assert.equal(await whoami(client), 'alice-by-cert');
      assert.match(client.credential.identity ?? '', /client certificate alice-by-cert/);
    } finally {
      client.close();
    }
  });

  it('exec plugin (a relative command is taken from the kubeconfig’s directory)', async () => {
    const pluginDir = path.join(dir, 'exec', 'bin');
    fs.mkdirSync(pluginDir, { recursive: true });
    const credential = JSON.stringify({
      apiVersion: 'client.authentication.k8s.io/v1',
      kind: 'ExecCredential',
      status: { token: bob.token },
    });
    fs.writeFileSync(path.join(pluginDir, 'plugin'), `#!/bin/sh\necho '${credential}'\n`, { mode: 0o700 });
    const file = path.join(dir, 'exec', 'kubeconfig');
    fs.writeFileSync(
      file,
      kubeconfig(
        {},
        {
          exec: {
            apiVersion: 'client.authentication.k8s.io/v1',
            command: './bin/plugin',
            interactiveMode: 'Never',
          },
        },
      ),
    );
    const client = KubeClient.fromLoaded(loadKubeconfig({ explicitPath: file, env: {} }), { retry: ONE_TRY });
    try {
      assert.equal(await whoami(client), bob.username);
    } finally {
      client.close();
    }
  });

  it('tls-server-name: the certificate is checked for that name, not the URL’s host', async () => {
    assert.equal(
      await whoamiWith(kubeconfig({ 'tls-server-name': 'localhost' }, { token: alice.token })),
      alice.username,
    );
    const err = await whoamiWith(
      kubeconfig({ 'tls-server-name': 'not-in-the-cert.example' }, { token: alice.token }),
    ).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(isKubeError(err, 'Unreachable'), String(err));
    assert.match(err.message, /not-in-the-cert\.example/);
  });

  it('merges the $KUBECONFIG list (first file wins) and honours --context', async () => {
    const one = path.join(dir, 'merge-one.yaml');
    const two = path.join(dir, 'merge-two.yaml');
    const ca = b64(fixture.cp.caPem);
    fs.writeFileSync(
      one,
      stringify({
        clusters: [{ name: 'h', cluster: { server: fixture.cp.server, 'certificate-authority-data': ca } }],
        users: [{ name: 'u', user: { token: alice.token } }],
        contexts: [{ name: 'main', context: { cluster: 'h', user: 'u' } }],
        'current-context': 'main',
      }),
    );
    fs.writeFileSync(
      two,
      stringify({
        // Losers: this file's cluster "h" points nowhere, its user "u" is bob.
        clusters: [
          { name: 'h', cluster: { server: 'https://127.0.0.1:1', 'certificate-authority-data': ca } },
        ],
        users: [
          { name: 'u', user: { token: bob.token } },
          { name: 'b', user: { token: bob.token } },
        ],
        contexts: [{ name: 'as-bob', context: { cluster: 'h', user: 'b' } }],
        'current-context': 'as-bob',
      }),
    );
    const env = { KUBECONFIG: [path.join(dir, 'absent.yaml'), one, two].join(path.delimiter) };
    const merged = KubeClient.fromLoaded(loadKubeconfig({ env }), { retry: ONE_TRY });
    const asBob = KubeClient.fromLoaded(loadKubeconfig({ env, context: 'as-bob' }), { retry: ONE_TRY });
    try {
      assert.equal(await whoami(merged), alice.username);
      assert.equal(await whoami(asBob), bob.username, "file two's context, with file one's cluster");
    } finally {
      merged.close();
      asBob.close();
    }
  });

  it("the pod's service account (client-node's loadFromCluster), its token re-read when it rotates", async () => {
    const root = path.join(dir, 'pod');
    const sa = path.join(root, SERVICE_ACCOUNT_DIR);
    fs.mkdirSync(sa, { recursive: true });
    fs.writeFileSync(path.join(sa, 'ca.crt'), fixture.cp.caPem);
    fs.writeFileSync(path.join(sa, 'namespace'), 'default');
    fs.writeFileSync(path.join(sa, 'token'), await serviceAccountToken(fixture.cp, 'controller-a'));
    const { hostname, port } = new URL(fixture.cp.server);
    const env = {
      KUBERNETES_SERVICE_HOST: hostname,
      KUBERNETES_SERVICE_PORT: port,
      KUBECONFIG: path.join(dir, 'absent'),
    };
    const loaded = rancherKubeconfig({ kubeconfigPath: undefined, kubeContext: undefined }, env, root);
    assert.equal(loaded.source, 'in-cluster service account');
    const client = KubeClient.fromLoaded(loaded, { retry: ONE_TRY });
    try {
      assert.equal(await whoami(client), 'system:serviceaccount:default:controller-a');
      rotate(path.join(sa, 'token'), await serviceAccountToken(fixture.cp, 'controller-b'));
      assert.equal(await whoami(client), 'system:serviceaccount:default:controller-b');
    } finally {
      client.close();
    }
  });
});

describe('basic auth (kube-apiserver has no basic auth since 1.19: a loopback server checks the header)', () => {
  it('sends the kubeconfig’s username and password, and a refusal names the user', async () => {
    const seen: string[] = [];
    const server = http.createServer((req, res) => {
      seen.push(req.headers.authorization ?? '');
      const ok = req.headers.authorization === `Basic ${b64('admin:basic-pass-1234')}`;
      res.statusCode = ok ? 200 : 401;
      res.setHeader('Content-Type', 'application/json');
      res.end(
        JSON.stringify(
          ok ? { kind: 'NamespaceList', items: [] } : { kind: 'Status', code: 401, message: 'Unauthorized' },
        ),
      );
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    const config = (password: string): string =>
      stringify({
        clusters: [{ name: 'c', cluster: { server: url, 'insecure-skip-tls-verify': true } }],
        users: [{ name: 'u', user: { username: 'admin', password } }],
        contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
        'current-context': 'c',
      });
    try {
      const good = KubeClient.fromKubeconfig(config('basic-pass-1234'), { retry: ONE_TRY });
      await good.list(Resources.namespace);
      good.close();
      const bad = KubeClient.fromKubeconfig(config('wrong-pass-5678'), { retry: ONE_TRY });
      const err = await bad.list(Resources.namespace).then(
        () => undefined,
        (e: unknown) => e,
      );
      bad.close();
      assert.ok(isCredentialRejected(err));
      assert.equal(err.extra.credential?.identity, 'user admin');
      assert.ok(!err.message.includes('wrong-pass-5678'));
      assert.equal(seen.length, 2);
    } finally {
      server.close();
    }
  });
});

describe('an IPv6 server URL (kube-apiserver bound to ::1)', () => {
  let cp: ControlPlane | undefined;
  before(async () => {
    cp = await startControlPlane({ name: 'ipv6', bindAddress: '::1', controllerManager: false });
  });
  after(() => cp?.stop());

  it('reaches https://[::1]:port', async () => {
    assert.ok(cp);
    assert.match(cp.server, /^https:\/\/\[::1\]:\d+$/);
    const client = KubeClient.fromKubeconfig(cp.adminKubeconfig, { retry: ONE_TRY });
    try {
      assert.equal(await whoami(client), 'sandbox-admin');
    } finally {
      client.close();
    }
  });
});
