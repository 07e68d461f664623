// Kubeconfigs a hostile cloud credential could hold, for fast-check: Rancher's shape (a
// token, the server) with one or more fields that name a file to read, a command to run or
// a proxy, as client-go or client-node spells it and in other letter cases, with unicode and huge values
// around them. Each names the tripwires (src/kube/testing/tripwires.ts), so that anything
// read, run or sent shows; `fields` are the phrases the refusal must contain.
import fc from 'fast-check';
import { stringify } from 'yaml';
import type { Tripwires } from '../../src/kube/testing/tripwires.js';

export interface HostileKubeconfig {
  text: string;
  /** "users[0].user.token-file", …: what the refusal must name. */
  fields: string[];
}

type Field = { on: 'user' | 'cluster'; key: string; value: unknown };

/** Names and values of any size and script: the content's own text, which no message may quote. */
const anyText = fc.oneof(
  fc.string({ minLength: 1, maxLength: 40, unit: 'grapheme' }),
  fc.string({ minLength: 1, maxLength: 40, unit: 'binary-ascii' }),
  fc.constantFrom('ünïcödé-名前', '../../etc/passwd', '"; rm -rf /; echo "'),
  fc.integer({ min: 64 * 1024, max: 300 * 1024 }).map((n) => 'x'.repeat(n)),
);

function hostileFields(wires: Tripwires): fc.Arbitrary<Field>[] {
  const path = fc.oneof(
    fc.constantFrom(wires.files.token, wires.files.cert, wires.files.key, wires.files.ca),
    fc.constant('/var/run/secrets/kubernetes.io/serviceaccount/token'),
    anyText,
  );
  const command = fc.oneof(fc.constant(wires.command), anyText);
  const spelled = (...names: string[]) => fc.constantFrom(...names);
  return [
    fc
      .tuple(
        spelled('token-file', 'tokenFile', 'TokenFile', 'TOKEN-FILE'),
        fc.oneof(path, fc.integer({ min: 0, max: 9 })),
      )
      .map(([key, value]) => ({ on: 'user', key, value })),
    fc
      .tuple(spelled('client-certificate', 'client-key', 'Client-Certificate'), path)
      .map(([key, value]) => ({ on: 'user', key, value })),
    fc
      .tuple(spelled('exec', 'Exec'), command, fc.array(anyText, { maxLength: 3 }))
      .map(([key, cmd, args]) => ({
        on: 'user',
        key,
        value: {
          apiVersion: 'client.authentication.k8s.io/v1',
          command: cmd,
          args,
          env: [{ name: 'X', value: 'y' }],
        },
      })),
    fc
      .oneof(
        command.map((cmd) => ({
          name: 'gcp',
          config: { 'cmd-path': cmd, 'cmd-args': 'config config-helper' },
        })),
        fc.constant({ name: 'azure', config: { 'config-mode': '1', 'cmd-path': wires.command } }),
        fc.constant({
          name: 'oidc',
          config: { 'idp-issuer-url': wires.url, 'refresh-token': 'r', 'client-id': 'c' },
        }),
        path.map((tokenFile) => ({ name: 'tokenFile', config: { tokenFile } })),
      )
      .map((value) => ({ on: 'user', key: 'auth-provider', value })),
    fc
      .tuple(spelled('certificate-authority', 'Certificate-Authority'), path)
      .map(([key, value]) => ({ on: 'cluster', key, value })),
    fc
      .tuple(
        spelled('proxy-url', 'Proxy-URL'),
        fc.constantFrom(wires.url, wires.url.replace('http:', 'socks5:'), `http://u:p@${wires.url.slice(7)}`),
      )
      .map(([key, value]) => ({ on: 'cluster', key, value })),
  ];
}

/** A kubeconfig as Rancher makes it, server the tripwire, with at least one hostile field. */
export function hostileKubeconfig(wires: Tripwires): fc.Arbitrary<HostileKubeconfig> {
  return fc
    .record({
      name: anyText.filter((n) => n.length < 1000),
      token: anyText,
      extra: fc.dictionary(fc.string({ minLength: 1, maxLength: 10 }), anyText, { maxKeys: 2 }),
      hostile: fc.uniqueArray(fc.oneof(...hostileFields(wires)), {
        minLength: 1,
        maxLength: 4,
        selector: (f) => `${f.on}/${f.key.toLowerCase()}`,
      }),
    })
    .map(({ name, token, extra, hostile }) => {
      const user: Record<string, unknown> = { ...extra, token };
      const cluster: Record<string, unknown> = { server: wires.url, 'insecure-skip-tls-verify': true };
      for (const f of hostile) (f.on === 'user' ? user : cluster)[f.key] = f.value;
      const text = stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name, cluster }],
        users: [{ name, user }],
        contexts: [{ name, context: { cluster: name, user: name } }],
        'current-context': name,
      });
      return {
        text,
        fields: hostile.map((f) => `${f.on === 'user' ? 'users' : 'clusters'}[0].${f.on}.${f.key}`),
      };
    });
}
