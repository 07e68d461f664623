import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FAKE_TOKEN, FAKE_TOKEN_SECRET, rancherKubeconfig } from './testing/kubeconfig.js';
import { describeToken } from './credential.js';
import {
  decodeBase64OrPlain,
  describeKubeconfig,
  KubeconfigError,
  kubeconfigProblems,
  loadKubeconfig,
} from './kubeconfig-content.js';
import { redact } from '../log/redact.js';

const REDACTED = '[REDACTED]';

const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');

function kubeconfigWithUser(user: string): string {
  return rancherKubeconfig().replace(/ {2}user:\n {4}token: .*\n$/, `  user:\n${user}`);
}

describe('decodeBase64OrPlain', () => {
  it('decodes valid padded base64, also with line breaks (as Go does)', () => {
    const text = rancherKubeconfig();
    assert.equal(decodeBase64OrPlain(b64(text)), text);
    assert.equal(decodeBase64OrPlain(b64(text).replace(/(.{76})/g, '$1\n')), text);
  });

  it('keeps plain text, unpadded or truncated base64, and base64 of non-text bytes as given', () => {
    assert.equal(decodeBase64OrPlain('apiVersion: v1\n'), 'apiVersion: v1\n');
    assert.equal(decodeBase64OrPlain(''), '');
    const truncated = b64('apiVersion: v1\nkind: Config\n').slice(0, 22);
    assert.equal(decodeBase64OrPlain(truncated), truncated);
    assert.equal(decodeBase64OrPlain('YWJj'), 'abc');
    assert.equal(
      decodeBase64OrPlain('abcd'),
      'abcd',
      '"abcd" decodes to non-UTF-8 bytes: not a base64 encoding of text',
    );
  });
});

describe('decodeBase64OrPlain: large values', () => {
  it('decodes 6 MiB of base64 in linear time (no regex backtracking)', () => {
    const text = 'apiVersion: v1\n'.repeat(300_000);
    const started = performance.now();
    assert.equal(decodeBase64OrPlain(b64(text)), text);
    assert.ok(performance.now() - started < 2_000, `${performance.now() - started} ms`);
  });
});

describe('kubeconfig validation and description', () => {
  it('describes a Rancher kubeconfig without its secret', () => {
    const d = describeKubeconfig(rancherKubeconfig());
    assert.deepEqual(d, {
      server: 'https://rancher.example.test/k8s/clusters/c-m-abcd1234',
      contextName: 'harvester',
      userName: 'harvester',
      authKind: 'token',
      tokenName: 'kubeconfig-u-abc12',
    });
    assert.ok(!JSON.stringify(d).includes(FAKE_TOKEN_SECRET));
  });

  it('names bootstrap tokens by id and service-account JWTs by account, with expiry', () => {
    assert.deepEqual(describeToken('abcdef.0123456789abcdef'), {
      identity: 'bootstrap token abcdef',
      name: 'abcdef',
    });
    const claims = {
      'kubernetes.io': { namespace: 'kube-system', serviceaccount: { name: 'deployer' } },
      exp: 1700000000,
    };
    const jwt = [
      'eyJhbGciOiJSUzI1NiJ9',
      Buffer.from(JSON.stringify(claims)).toString('base64url'),
      'c2lnbmF0dXJl',
    ].join('.');
    assert.deepEqual(describeToken(jwt), {
      identity: 'a JWT bearer token',
      name: 'system:serviceaccount:kube-system:deployer',
      expiresAt: new Date(1700000000 * 1000),
    });
    assert.deepEqual(describeToken('opaque-secret-without-structure'), { identity: 'a bearer token' });
  });

  it('tells the auth kinds apart', () => {
    // An exec plugin is the operator's own only: a cloud credential may not hold one.
    const kind = (user: string): string => describeKubeconfig(kubeconfigWithUser(user), 'operator').authKind;
    assert.equal(kind('    client-certificate-data: Y2VydA==\n    client-key-data: a2V5\n'), 'client-cert');
    assert.equal(
      kind('    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: get-token\n'),
      'exec',
    );
    assert.equal(kind('    username: admin\n    password: pw\n'), 'basic');
    assert.equal(kind('    {}\n'), 'none');
  });

  it('strips user:password from the server URL it reports', () => {
    const d = describeKubeconfig(
      rancherKubeconfig({ server: 'https://admin:pw@harvester.example.test:6443' }),
    );
    assert.equal(d.server, 'https://harvester.example.test:6443');
  });

  const BROKEN: Array<[string, string, RegExp]> = [
    ['empty', '   ', /is empty/],
    ['not YAML', 'a: [b', /not valid YAML \(line 1/],
    ['a scalar', 'just some words', /not a kubeconfig/],
    ['truncated base64 taken as text', b64(rancherKubeconfig()).slice(0, 61), /truncated or corrupted/],
    [
      'truncated YAML',
      rancherKubeconfig().slice(0, rancherKubeconfig().indexOf('users:')),
      /user "harvester", which is not in users/,
    ],
    ['no current context', rancherKubeconfig({ currentContext: '' }), /has no current-context/],
    [
      'unknown current context',
      rancherKubeconfig({ currentContext: 'other' }),
      /current-context "other", but no context/,
    ],
    ['bad server', rancherKubeconfig({ server: '::not-a-url' }), /not a valid URL/],
    ['wrong scheme', rancherKubeconfig({ server: 'unix:///run/k.sock' }), /scheme "unix:"/],
    ['entry without name', 'clusters:\n- cluster: {server: "https://h"}\n', /clusters\[0\]\.name is missing/],
  ];
  for (const [what, text, expected] of BROKEN) {
    it(`rejects a kubeconfig: ${what}`, () => {
      const problems = kubeconfigProblems(text);
      assert.ok(
        problems.some((p) => expected.test(p)),
        problems.join('; '),
      );
      assert.throws(() => loadKubeconfig(text), KubeconfigError);
    });
  }

  it('never quotes the token, even when the YAML around it is broken', () => {
    const broken = rancherKubeconfig().replace('users:', 'users: [');
    const problems = kubeconfigProblems(broken).join(' ');
    assert.ok(!problems.includes(FAKE_TOKEN_SECRET), problems);
    assert.ok(!problems.includes(FAKE_TOKEN), problems);
  });

  // A secret pasted unquoted is read by YAML as something else (a tag, an alias, a block
  // scalar header, an escape): the parsers' messages quote it; ours must not.
  const SECRET = 'Zq8w7e6r5t4y3u2i1o0p9a8s7d6f5';
  const HOSTILE: Array<[string, string]> = [
    ['a token beginning with "!" (a tag)', `    token: !${SECRET}\n`],
    ['a token beginning with "!!" (a standard-looking tag)', `    token: !!${SECRET}\n`],
    ['a token beginning with "*" (an alias)', `    token: *${SECRET}\n`],
    ['a password beginning with "|" (a block scalar header)', `    username: u\n    password: |${SECRET}\n`],
    ['a double-quoted token with a backslash', `    token: "\\${SECRET}"\n`],
    ['a tag in flow style', `    {token: !${SECRET}}\n`],
    ['a tag after a broken line', `    token: !${SECRET} x: y\n`],
  ];
  for (const [what, user] of HOSTILE) {
    it(`never quotes a secret the parsers misread: ${what}`, () => {
      const text = kubeconfigWithUser(user);
      let problems: string;
      try {
        problems = kubeconfigProblems(text).join('; ');
      } catch (err) {
        problems = err instanceof Error ? err.message : String(err);
      }
      for (let i = 0; i + 6 <= SECRET.length; i++) {
        assert.ok(!problems.includes(SECRET.slice(i, i + 6)), `"${problems}" quotes the secret`);
      }
      assert.throws(
        () => loadKubeconfig(text),
        (err: unknown) => {
          assert.ok(err instanceof KubeconfigError, String(err));
          assert.ok(!err.message.includes(SECRET.slice(0, 6)), err.message);
          return true;
        },
      );
      // Registered before it was validated: a line of it reaching a log is redacted whole.
      const line = (user.trim().split('\n').at(-1) ?? '').trim();
      assert.equal(redact(line), REDACTED);
    });
  }

  it('says where a value YAML reads as a tag is, and to quote it', () => {
    const problems = kubeconfigProblems(kubeconfigWithUser(`    token: !${SECRET}\n`));
    assert.deepEqual(problems, [
      'is not valid YAML (line 16, column 12: a value beginning with "!" is read as a YAML tag; quote the value)',
    ]);
  });

  it('loads a valid one for the client', () => {
    const kc = loadKubeconfig(rancherKubeconfig());
    assert.equal(kc.getCurrentCluster()?.server, 'https://rancher.example.test/k8s/clusters/c-m-abcd1234');
  });
});
