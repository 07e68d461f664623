import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { importsOf, orderTestFiles, runInside } from './test-order.js';

const root = path.resolve('/d');
const p = (rel: string): string => path.join(root, rel);

describe('the order of the test files', () => {
  const modules: Record<string, string> = {
    [p('sandbox/control-plane/control-plane.js')]: "import fs from 'node:fs';",
    [p('sandbox/sandbox.js')]: "import { startControlPlane } from './control-plane/control-plane.js';",
    [p('test/support/fixture.js')]: "export { startSandbox } from '../../sandbox/sandbox.js';",
    [p('test/a_test.js')]: "import { x } from './support/unit.js';",
    [p('test/support/unit.js')]: "import { y } from './unit2.js';",
    [p('test/support/unit2.js')]: "import { x } from './unit.js';", // a circle
    [p('test/b_test.js')]: "import { startSandbox } from './support/fixture.js';",
    [p('test/c_test.js')]: "const m = await import('../sandbox/sandbox.js');",
    [p('test/d_test.js')]: "import assert from 'node:assert';",
    [p('test/e_test.js')]:
      `const W = path.join(root, ${['dist', 'sandbox', 'bin', 'walkthrough' + '.js'].map((x) => `'${x}'`).join(', ')});`,
    [p('test/f_test.js')]: 'const s = "an import of \'./support/fixture.js\' in a string";',
  };
  const read = (f: string): string | undefined => modules[f];
  const target = p('sandbox/control-plane/control-plane.js');

  it('puts the files that reach the control plane (through re-exports and dynamic imports) first, those running a sandbox command before them', () => {
    const files = ['a', 'b', 'c', 'd', 'e', 'f'].map((f) => p(`test/${f}_test.js`));
    assert.deepEqual(
      orderTestFiles(files, target, read).map((f) => path.basename(f)),
      ['e_test.js', 'b_test.js', 'c_test.js', 'a_test.js', 'd_test.js', 'f_test.js'],
    );
  });

  it('reads static, side-effect and dynamic relative imports, not packages', () => {
    const source =
      "import a from './a.js';\nimport './b.js';\nexport * from \"../c.js\";\nawait import('./d.js');\nimport fs from 'node:fs';";
    assert.deepEqual(
      importsOf(p('x/y.js'), source).map((f) => path.relative(root, f)),
      ['x/a.js', 'x/b.js', 'c.js', 'x/d.js'],
    );
  });

  it('leaves out the test files another one imports (they run inside it), and runs that one right after the sandbox commands', () => {
    const more: Record<string, string> = {
      ...modules,
      [p('test/shared/g_test.js')]:
        "import '../support/shared.js';\nimport '../b_test.js';\nimport '../c_test.js';",
      [p('test/support/shared.js')]: "import { startSandbox } from './fixture.js';",
    };
    const read2 = (f: string): string | undefined => more[f];
    const files = ['a', 'b', 'c', 'd', 'e', 'f', 'shared/g'].map((f) => p(`test/${f}_test.js`));
    assert.deepEqual(
      orderTestFiles(files, target, read2).map((f) => path.relative(p('test'), f)),
      ['e_test.js', 'shared/g_test.js', 'a_test.js', 'd_test.js', 'f_test.js'],
    );
    assert.deepEqual(
      [...runInside(files, read2)].map(([inner, outer]) => [path.basename(inner), path.basename(outer)]),
      [
        ['b_test.js', 'g_test.js'],
        ['c_test.js', 'g_test.js'],
      ],
    );
    // A file two others import would run twice.
    const twice = { ...more, [p('test/h_test.js')]: "import './b_test.js';" };
    assert.throws(
      () => orderTestFiles([...files, p('test/h_test.js')], target, (f) => twice[f]),
      /b_test\.js is imported by two test files .*: it would run twice/,
    );
  });
});
