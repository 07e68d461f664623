// The project's lint configuration refuses an import across layers (eslint/layers.js):
// small files linted in memory, as if they were at the path given, with the repository's
// own eslint.config.js (type-aware rules off: these files are not in the TypeScript project).
import assert from 'node:assert/strict';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';

const ROOT = fileURLToPath(new URL('../..', import.meta.url)); // from dist/test/

let eslint: ESLint;

/** The layer rule's messages for `code` placed at `file` (relative to the repository). */
async function layerErrors(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(ROOT, file) });
  assert.ok(result, `a lint result for ${file}`);
  return result.messages.filter((m) => m.ruleId === 'layers/imports').map((m) => m.message);
}

describe('lint: layers of src/', () => {
  before(() => {
    eslint = new ESLint({ cwd: ROOT, overrideConfig: tseslint.configs.disableTypeChecked });
  });

  it('refuses the pure layer importing kube/, in every form of import', async () => {
    const errors = await layerErrors(
      'src/harvester/layer-fixture.ts',
      [
        "import { KubeClient } from '../kube/client.js';",
        "import type { DriverConfig } from '../driver/config.js';",
        "export * from '../cli/program.js';",
        "export { run } from '../controller/main.js';",
        "export const later = () => import('../plugin/main.js');",
        'export const client = KubeClient;',
        'export type Config = DriverConfig;',
      ].join('\n'),
    );
    assert.deepEqual(errors, [
      'src/harvester/ may not import src/kube/ (it may import common/, api/)',
      'src/harvester/ may not import src/driver/ (it may import common/, api/)',
      'src/harvester/ may not import src/cli/ (it may import common/, api/)',
      'src/harvester/ may not import src/controller/ (it may import common/, api/)',
      'src/harvester/ may not import src/plugin/ (it may import common/, api/)',
    ]);
  });

  it('lets each layer import what lies below it, and itself', async () => {
    assert.deepEqual(
      await layerErrors(
        'src/harvester/testing/layer-fixture.ts',
        "export * from '../labels.js';\nexport * from '../../common/durations.js';\nexport * from 'yaml';\n",
      ),
      [],
    );
    assert.deepEqual(
      await layerErrors(
        'src/kube/layer-fixture.ts',
        "export * from '../log/redact.js';\nexport * from './wait.js';\n",
      ),
      [],
    );
    assert.deepEqual(
      await layerErrors(
        'src/controller/layer-fixture.ts',
        "export * from '../rancher/labels.js';\nexport * from '../kube/index.js';\nexport * from '../driver/config.js';\n",
      ),
      [],
    );
  });

  it('keeps a feature apart by layer: its pure folder never imports its I/O folder', async () => {
    assert.deepEqual(
      await layerErrors(
        'src/harvester/fixed-addresses/layer-fixture.ts',
        "export * from '../../driver/fixed-addresses/fixed-address.js';\nexport * from '../config/go-config.js';\n",
      ),
      ['src/harvester/ may not import src/driver/ (it may import common/, api/)'],
    );
    assert.deepEqual(
      await layerErrors(
        'src/driver/fixed-addresses/layer-fixture.ts',
        "export * from '../../harvester/fixed-addresses/ip-pool.js';\nexport * from '../config/index.js';\n",
      ),
      [],
    );
  });

  it('keeps kube/ on log/ and common/, and common/ on nothing', async () => {
    assert.deepEqual(
      await layerErrors('src/kube/layer-fixture.ts', "export * from '../harvester/labels.js';\n"),
      ['src/kube/ may not import src/harvester/ (it may import common/, api/, log/)'],
    );
    assert.deepEqual(
      await layerErrors('src/common/layer-fixture.ts', "export * from '../log/redact.js';\n"),
      ['src/common/ may not import src/log/ (it may import nothing outside itself)'],
    );
    assert.deepEqual(
      await layerErrors('src/rancher/layer-fixture.ts', "export * from '../kube/index.js';\n"),
      ['src/rancher/ may not import src/kube/ (it may import common/, api/)'],
    );
  });

  it('keeps the CLI, the controller and the plugin apart; only bin/ routes to them', async () => {
    assert.equal(
      (await layerErrors('src/cli/layer-fixture.ts', "export * from '../controller/process/config.js';\n"))
        .length,
      1,
    );
    assert.equal(
      (await layerErrors('src/controller/layer-fixture.ts', "export * from '../plugin/main.js';\n")).length,
      1,
    );
    assert.equal(
      (await layerErrors('src/plugin/layer-fixture.ts', "export * from '../cli/program.js';\n")).length,
      1,
    );
    assert.deepEqual(
      await layerErrors(
        'src/bin/harvester-machine.ts',
        "export * from '../cli/program.js';\nexport * from '../controller/main.js';\nexport * from '../plugin/main.js';\n",
      ),
      [],
    );
  });

  it('puts harvester-access/ below the driver and the three fronts, above kube/', async () => {
    assert.deepEqual(
      await layerErrors(
        'src/harvester-access/layer-fixture.ts',
        "export * from '../kube/index.js';\nexport * from '../harvester/labels.js';\nexport * from '../rancher/cloud-credential.js';\n",
      ),
      [],
    );
    assert.deepEqual(
      await layerErrors('src/harvester-access/layer-fixture.ts', "export * from '../driver/config.js';\n"),
      [
        'src/harvester-access/ may not import src/driver/ (it may import common/, api/, log/, harvester/, rancher/, kube/)',
      ],
    );
    for (const front of ['driver', 'cli', 'controller', 'plugin']) {
      assert.deepEqual(
        await layerErrors(
          `src/${front}/layer-fixture.ts`,
          "export * from '../harvester-access/harvester-api.js';\n",
        ),
        [],
        front,
      );
    }
    assert.equal(
      (
        await layerErrors(
          'src/harvester/layer-fixture.ts',
          "export * from '../harvester-access/clients.js';\n",
        )
      ).length,
      1,
    );
  });

  it('refuses src/ importing sandbox/, test/ or bench/, and a folder that is no layer', async () => {
    assert.deepEqual(
      await layerErrors(
        'src/driver/operations/layer-fixture.ts',
        "export * from '../../../test/support/eventually.js';\nexport * from '../../../sandbox/sandbox.js';\n",
      ),
      [
        'src/ never imports test/: sandbox/, bench/ and test/ may import src/, not the reverse',
        'src/ never imports sandbox/: sandbox/, bench/ and test/ may import src/, not the reverse',
      ],
    );
    assert.deepEqual(
      await layerErrors('src/newthing/layer-fixture.ts', "export * from '../kube/index.js';\n"),
      ['src/newthing/ is no layer: give it a row in eslint/layers.js'],
    );
  });
});
