// The project's lint configuration refuses I/O in the pure layers of src/ (eslint/pure-layers.js):
// small files linted in memory, as if they were at the path given, with the repository's own
// eslint.config.js (type-aware rules off: these files are not in the TypeScript project).
import assert from 'node:assert/strict';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';

const ROOT = fileURLToPath(new URL('../..', import.meta.url)); // from dist/test/

let eslint: ESLint;

/** The pure-layer rule's messages for `code` placed at `file` (relative to the repository). */
async function pureErrors(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(ROOT, file) });
  assert.ok(result, `a lint result for ${file}`);
  return result.messages.filter((m) => m.ruleId === 'pure/no-io').map((m) => m.message);
}

const READER = [
  'export async function read(load: () => Promise<string>): Promise<string> {',
  '  return await load();',
  '}',
  'export const later = async () => 1;',
  'export const both = () => Promise.all([]);',
  'export interface Reader { find(name: string): PromiseLike<string> }',
  'export const mod = () => import("./labels.js");',
].join('\n');

describe('lint: no I/O in the pure layers of src/', () => {
  before(() => {
    eslint = new ESLint({ cwd: ROOT, overrideConfig: tseslint.configs.disableTypeChecked });
  });

  it('refuses async functions, await, Promise and dynamic imports in each pure layer', async () => {
    const what = (layer: string) => `src/${layer}/ is a pure layer (no I/O: eslint/pure-layers.js)`;
    const why = 'the caller does the I/O and passes the result';
    assert.deepEqual(await pureErrors('src/harvester/pure-fixture.ts', READER), [
      `${what('harvester')}: no async function (${why})`,
      `${what('harvester')}: no Promise (${why})`,
      `${what('harvester')}: no Promise (${why})`,
      `${what('harvester')}: no await`,
      `${what('harvester')}: no async function (${why})`,
      `${what('harvester')}: no Promise (${why})`,
      `${what('harvester')}: no PromiseLike (${why})`,
      `${what('harvester')}: no dynamic import`,
    ]);
    for (const layer of ['rancher', 'api', 'common']) {
      assert.equal((await pureErrors(`src/${layer}/testing/pure-fixture.ts`, READER)).length, 8, layer);
    }
  });

  it('refuses modules that reach files, the network, processes or Kubernetes', async () => {
    const errors = await pureErrors(
      'src/rancher/pure-fixture.ts',
      [
        "import { readFileSync } from 'node:fs';",
        "import { readFile } from 'fs/promises';",
        "import { createConnection } from 'node:net';",
        "import * as net from 'node:net';",
        "import http from 'node:http';",
        "import { request } from 'node:https';",
        "import { spawn } from 'node:child_process';",
        "import { lookup } from 'node:dns';",
        "import { KubeConfig } from '@kubernetes/client-node';",
        "export { get } from 'node:http';",
        'export const all = [readFileSync, readFile, createConnection, net, http, request, spawn, lookup, KubeConfig];',
      ].join('\n'),
    );
    assert.deepEqual(
      errors.map((e) => e.replace(/^.*: no import of /, '')),
      [
        'node:fs',
        'fs/promises',
        'node:net',
        'node:net',
        'node:http',
        'node:https',
        'node:child_process',
        'node:dns',
        '@kubernetes/client-node',
        'node:http',
      ],
    );
  });

  it("lets pure code use node:net's address checks, hashing, and be tested asynchronously", async () => {
    assert.deepEqual(
      await pureErrors(
        'src/harvester/pure-fixture.ts',
        "import { isIP, isIPv4, isIPv6 } from 'node:net';\nimport { createHash } from 'node:crypto';\nexport const all = [isIP, isIPv4, isIPv6, createHash];\n",
      ),
      [],
    );
    assert.deepEqual(await pureErrors('src/harvester/pure-fixture_test.ts', READER), []);
  });

  it('leaves the layers that do I/O alone', async () => {
    for (const layer of ['kube', 'harvester-access', 'driver', 'cli', 'controller']) {
      assert.deepEqual(await pureErrors(`src/${layer}/pure-fixture.ts`, READER), [], layer);
    }
  });
});
