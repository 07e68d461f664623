// The project's import-circle check (package.json "lint:cycles", run by `npm run lint` and the
// test script) refuses a circle in src/ or sandbox/, type-only imports included, and neither has one.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url)); // from dist/test/

/** Runs the configured circle check in `cwd`, with the project's own dpdm. */
function checkCircles(cwd: string): { status: number | null; output: string } {
  const scripts = (
    JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
  ).scripts;
  const command = scripts['lint:cycles'];
  assert.ok(command, 'package.json has a lint:cycles script');
  const result = spawnSync('sh', ['-c', command], {
    cwd,
    encoding: 'utf8',
    env: {
      ...process.env,
      PATH: `${path.join(ROOT, 'node_modules', '.bin')}${path.delimiter}${process.env.PATH ?? ''}`,
    },
    timeout: 120_000,
  });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

describe('lint: import circles in src/ and sandbox/', () => {
  it('fails on a circle made of a type-only import and a value import', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'hm-cycles-'));
    try {
      mkdirSync(path.join(dir, 'src', 'feature'), { recursive: true });
      // The repository's own compiler options: `./b.js` names b.ts as TypeScript resolves it.
      writeFileSync(path.join(dir, 'tsconfig.json'), readFileSync(path.join(ROOT, 'tsconfig.json')));
      writeFileSync(
        path.join(dir, 'src', 'feature', 'a.ts'),
        "import type { B } from './b.js';\nexport interface A { b?: B }\n",
      );
      writeFileSync(
        path.join(dir, 'src', 'feature', 'b.ts'),
        "import { c } from '../c.js';\nexport interface B { c: typeof c }\n",
      );
      writeFileSync(
        path.join(dir, 'src', 'c.ts'),
        "import type { A } from './feature/a.js';\nexport const c: A[] = [];\n",
      );
      const { status, output } = checkCircles(dir);
      assert.equal(status, 1, output);
      const circle = output.split('\n').find((line) => line.includes(' -> '));
      assert.ok(circle, output);
      for (const file of ['src/c.ts', 'src/feature/a.ts', 'src/feature/b.ts'])
        assert.ok(circle.includes(file), circle);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('fails on a circle in sandbox/', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'hm-cycles-'));
    try {
      mkdirSync(path.join(dir, 'src'), { recursive: true });
      mkdirSync(path.join(dir, 'sandbox', 'rancher'), { recursive: true });
      writeFileSync(path.join(dir, 'tsconfig.json'), readFileSync(path.join(ROOT, 'tsconfig.json')));
      writeFileSync(path.join(dir, 'src', 'ok.ts'), 'export const ok = 1;\n');
      writeFileSync(
        path.join(dir, 'sandbox', 'rancher', 'jobs.ts'),
        "import type { Machine } from './provision.js';\nexport interface Job { m: Machine }\n",
      );
      writeFileSync(
        path.join(dir, 'sandbox', 'rancher', 'provision.ts'),
        "import type { Job } from './jobs.js';\nexport interface Machine { jobs: Job[] }\n",
      );
      const { status, output } = checkCircles(dir);
      assert.equal(status, 1, output);
      const circle = output.split('\n').find((line) => line.includes(' -> '));
      assert.ok(circle, output);
      for (const file of ['sandbox/rancher/jobs.ts', 'sandbox/rancher/provision.ts'])
        assert.ok(circle.includes(file), circle);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('finds none in the repository', () => {
    const { status, output } = checkCircles(ROOT);
    assert.equal(status, 0, output);
  });
});
