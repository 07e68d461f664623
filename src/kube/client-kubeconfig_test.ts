// A kubeconfig that client-node's parser rejects: the error says where, never what it read
// (js-yaml quotes an unquoted token beginning with "!" as the tag it took it for).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KubeClient } from './client.js';

const SECRET = 'Zq8w7e6r5t4y3u2i1o0p9a8s7d6f5';

describe('KubeClient.fromKubeconfig on content its parser rejects', () => {
  for (const [what, token] of [
    ['a tag', `!${SECRET}`],
    ['a standard tag', `!!${SECRET}`],
    ['an alias', `*${SECRET}`],
  ] as const) {
    it(`names the line, never the content: a token read as ${what}`, () => {
      const content = [
        'apiVersion: v1',
        'kind: Config',
        'clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]',
        'users:',
        '- name: u',
        '  user:',
        `    token: ${token}`,
        'contexts: [{name: c, context: {cluster: c, user: u}}]',
        'current-context: c',
      ].join('\n');
      assert.throws(
        () => KubeClient.fromKubeconfig(content),
        (err: unknown) => {
          assert.ok(err instanceof Error);
          assert.ok(!err.message.includes(SECRET.slice(0, 8)), err.message);
          assert.match(err.message, /^the kubeconfig: is not valid YAML \(/);
          return true;
        },
      );
    });
  }
});
