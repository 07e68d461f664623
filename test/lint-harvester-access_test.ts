// The project's lint configuration refuses naming a Harvester or KubeVirt resource type in the
// driver, the CLI and the controller (eslint/harvester-access.js): they reach Harvester only
// through src/harvester-access. Small files linted in memory, as if they were at the path
// given, with the repository's own eslint.config.js (type-aware rules off).
import assert from 'node:assert/strict';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';

const ROOT = fileURLToPath(new URL('../..', import.meta.url)); // from dist/test/
const RULE = 'harvester-access/only-through-access';

let eslint: ESLint;

/** The lines the rule refuses in `code` placed at `file` (relative to the repository). */
async function refusedLines(file: string, code: string): Promise<number[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(ROOT, file) });
  assert.ok(result, `a lint result for ${file}`);
  return result.messages.filter((m) => m.ruleId === RULE).map((m) => m.line);
}

const RAW_CALLS = [
  "import { Resources } from '../../kube/resources.js';",
  "import { VmDhcpResources } from '../../harvester-access/harvester-api.js';",
  'declare const client: { find(t: unknown, at: unknown): Promise<unknown> };',
  "export const vm = client.find(Resources.virtualMachine, { namespace: 'ns', name: 'm' });",
  "export const vmi = client.find(Resources.virtualMachineInstance, { namespace: 'ns', name: 'm' });",
  "export const pvc = client.find(Resources.pvc, { namespace: 'ns', name: 'd' });",
  'export const devices = [Resources.pciDevice, Resources.usbDevice];',
].join('\n');

const RANCHER_CALLS = [
  "import { Resources } from '../../kube/resources.js';",
  'declare const rancher: { find(t: unknown, at: unknown): Promise<unknown> };',
  "export const m = rancher.find(Resources.capiMachine, { namespace: 'ns', name: 'm' });",
  "export const s = rancher.find(Resources.secret, { namespace: 'ns', name: 'cc' });",
  'export const review = Resources.selfSubjectReview;',
].join('\n');

describe('lint: the fronts reach Harvester only through src/harvester-access', () => {
  before(() => {
    eslint = new ESLint({ cwd: ROOT, overrideConfig: tseslint.configs.disableTypeChecked });
  });

  it('refuses Harvester and KubeVirt resource types in the driver, the CLI and the controller', async () => {
    for (const file of [
      'src/driver/operations/raw-fixture.ts',
      'src/cli/doctor/raw-fixture.ts',
      'src/controller/gate/raw-fixture.ts',
      'src/plugin/raw-fixture.ts',
    ])
      assert.deepEqual(await refusedLines(file, RAW_CALLS), [2, 4, 5, 6, 7, 7], file);
  });

  it("lets src/harvester-access name them, and the fronts name Rancher's and generic types", async () => {
    assert.deepEqual(await refusedLines('src/harvester-access/raw-fixture.ts', RAW_CALLS), []);
    assert.deepEqual(await refusedLines('src/controller/gate/rancher-fixture.ts', RANCHER_CALLS), []);
  });

  it('leaves tests beside the code alone (their fakes name the types)', async () => {
    assert.deepEqual(await refusedLines('src/controller/gate/raw-fixture_test.ts', RAW_CALLS), []);
  });
});
