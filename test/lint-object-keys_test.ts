// The project's lint configuration refuses building an object key ("namespace/name") by hand
// outside src/api (eslint/object-keys.js): small files linted in memory, as if they were at the
// path given, with the repository's own eslint.config.js (type-aware rules off).
import assert from 'node:assert/strict';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';

const ROOT = fileURLToPath(new URL('../..', import.meta.url)); // from dist/test/
const RULE = 'object-keys/no-hand-built-keys';

let eslint: ESLint;

/** The lines the rule refuses in `code` placed at `file` (relative to the repository). */
async function refusedLines(file: string, code: string): Promise<number[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(ROOT, file) });
  assert.ok(result, `a lint result for ${file}`);
  return result.messages.filter((m) => m.ruleId === RULE).map((m) => m.line);
}

const HAND_BUILT = [
  'declare const vm: { metadata: { namespace?: string; name: string } };',
  'declare const ns: string;',
  'export const a = `${ns}/${vm.metadata.name}`;',
  'export const b = `VM ${vm.metadata.namespace ?? ""}/${vm.metadata.name} is gone`;',
  "export const c = ns + '/' + vm.metadata.name;",
].join('\n');

describe('lint: object keys are built only in src/api', () => {
  before(() => {
    eslint = new ESLint({ cwd: ROOT, overrideConfig: tseslint.configs.disableTypeChecked });
  });

  it('refuses "namespace/name" built by hand in src/, inside a message too', async () => {
    for (const file of [
      'src/controller/keys-fixture.ts',
      'src/harvester/keys-fixture.ts',
      'src/cli/x/keys-fixture.ts',
    ])
      assert.deepEqual(await refusedLines(file, HAND_BUILT), [3, 4, 5], file);
  });

  it('lets src/api build them, and a "/" that is no object key pass', async () => {
    assert.deepEqual(await refusedLines('src/api/keys-fixture.ts', HAND_BUILT), []);
    const notKeys = [
      'declare const c: { address: string; prefix: number };',
      'declare const t: { group: string; version: string };',
      'declare const resource: string, subresource: string, name: string;',
      'export const cidr = `${c.address}/${c.prefix}`;',
      'export const apiVersion = `${t.group}/${t.version}`;',
      'export const path = `/apis/${t.group}/${t.version}`;',
      'export const sub = `${resource}/${subresource}`;',
      'export const one = `${name}/`;',
      'export const label = `${resource}-${name}`;',
    ].join('\n');
    assert.deepEqual(await refusedLines('src/controller/keys-fixture.ts', notKeys), []);
  });

  it('leaves tests beside the code alone (they write the expected text)', async () => {
    assert.deepEqual(await refusedLines('src/controller/keys-fixture_test.ts', HAND_BUILT), []);
  });
});
