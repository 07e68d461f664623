// No file of the repository may point at material outside it, and every
// docs/upstream/<page>.md#<anchor> a file cites must exist, so a reader of the repository
// alone can follow every reference. Pure and fast: reads the files, starts nothing.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { repoRoot } from '../sandbox/repo.js';
import {
  githubSlug,
  headingAnchors,
  inRepository,
  missingPathMentions,
  referenceProblems,
  unindexedRecords,
  unlinkedPages,
  type RepoView,
} from './support/repo-references.js';

const SCANNED = ['src', 'sandbox', 'test', 'bench', 'docs', 'deploy', 'scripts', 'README.md'];
const SKIPPED_DIRS = new Set(['node_modules', 'dist', '.git']);

function listFiles(root: string, rel: string): string[] {
  const full = path.join(root, rel);
  if (!fs.existsSync(full)) return [];
  if (fs.statSync(full).isFile()) return [rel];
  return fs
    .readdirSync(full, { withFileTypes: true })
    .filter((e) => !SKIPPED_DIRS.has(e.name))
    .flatMap((e) => listFiles(root, path.posix.join(rel, e.name)));
}

/** The scanned text files of the repository, with their repository-relative paths. */
function repositoryFiles(root: string): Map<string, string> {
  const files = new Map<string, string>();
  for (const rel of SCANNED.flatMap((top) => listFiles(root, top))) {
    const text = fs.readFileSync(path.join(root, rel), 'utf8');
    if (!text.includes('\u0000')) files.set(rel, text);
  }
  return files;
}

function viewOf(files: ReadonlyMap<string, string>, exists: (p: string) => boolean): RepoView {
  const markdown = new Map<string, Set<string>>();
  for (const [file, text] of files) if (file.endsWith('.md')) markdown.set(file, headingAnchors(text));
  return { markdown, exists };
}

// The forbidden forms, assembled so that this file does not contain them itself.
const RANCHER = ['rancher', 'md'].join('.');
const UP = ['docs', 'upstream'].join('/');
const SPEC_FILE = ['spec', RANCHER].join('/');
const SHARED_DIR = ['..', 'shared', 'spec'].join('/');
const SEED_FILE = ['seeds', '000_report.txt'].join('/');
const BARE_PAGE = ['harvester-kubevirt', 'md'].join('.');
const SPEC_SECTION = ['spec', '§4'].join(' ');

const PAGE = `# Rancher\n\n## Why rm reloads the kubeconfig\n\ntext\n\n## Example\n\n## Example\n`;
const fakeRepo = (): RepoView =>
  viewOf(new Map([[`${UP}/${RANCHER}`, PAGE]]), (p) => p === `${UP}/${RANCHER}` || p === 'src');

describe('githubSlug', () => {
  it('makes the anchors GitHub makes', () => {
    assert.equal(githubSlug('Why rm reloads the kubeconfig'), 'why-rm-reloads-the-kubeconfig');
    assert.equal(githubSlug("Rancher's `SafeConcatName` (names)"), 'ranchers-safeconcatname-names');
    assert.equal(githubSlug('Guest cluster volumes and hot-plug'), 'guest-cluster-volumes-and-hot-plug');
    assert.equal(githubSlug('Links [to a page](x.md) and snake_case'), 'links-to-a-page-and-snake_case');
    assert.equal(githubSlug('§2 Über: 5 × 5'), '2-über-5--5');
  });

  it('numbers repeated headings and ignores fenced code', () => {
    const anchors = headingAnchors('# A\n## B\n```yaml\n# not a heading\n```\n## B\n');
    assert.deepEqual([...anchors].sort(), ['a', 'b', 'b-1']);
  });
});

describe('referenceProblems', () => {
  const problemsOf = (file: string, text: string): string[] =>
    referenceProblems(file, text, fakeRepo()).map((p) => `${p.line}: ${p.message}`);

  it('accepts a reference to an existing heading', () => {
    assert.deepEqual(problemsOf('src/a.ts', `// see ${UP}/${RANCHER}#why-rm-reloads-the-kubeconfig`), []);
    assert.deepEqual(problemsOf('src/a.ts', `// ${UP}/${RANCHER}#example-1 and ${UP}/${RANCHER}`), []);
  });

  it('refuses every way of pointing outside the repository', () => {
    for (const text of [
      `// (${SPEC_FILE} §1)`,
      `# ${SHARED_DIR}/x.md`,
      `see ${SEED_FILE}`,
      `// (${SPEC_SECTION})`,
    ]) {
      const problems = problemsOf('src/a.ts', `first line\n${text}\n`);
      assert.equal(problems.length >= 1, true, `${text} should be refused`);
      assert.match(problems[0] ?? '', /^2: .*outside the repository|^2: .*section number/);
    }
  });

  it('refuses a bare page name outside docs/upstream, and accepts it inside', () => {
    assert.match(
      problemsOf('sandbox/x.yaml', `# (${BARE_PAGE})`)[0] ?? '',
      /ambiguous; cite docs\/upstream\//,
    );
    assert.deepEqual(problemsOf(`${UP}/${RANCHER}`, `text ${BARE_PAGE} text`), []);
  });

  it('refuses a missing page and a missing anchor', () => {
    assert.match(problemsOf('src/a.ts', `// ${UP}/nowhere.md#x`)[0] ?? '', /nowhere\.md does not exist/);
    assert.match(
      problemsOf('src/a.ts', `// ${UP}/${RANCHER}#cleanup`)[0] ?? '',
      /has no heading with anchor #cleanup/,
    );
  });

  it('checks relative Markdown links and anchors in Markdown files, not URLs', () => {
    const file = `${UP}/other.md`;
    assert.deepEqual(
      problemsOf(file, `[a](${RANCHER}#example) [b](https://example.org/x.md#y) [c](../../src)`),
      [],
    );
    assert.match(problemsOf(file, `[a](${RANCHER}#nope)`)[0] ?? '', /no heading with anchor #nope/);
    assert.match(problemsOf(file, '[a](../../../outside.md)')[0] ?? '', /leaves the repository/);
    assert.match(problemsOf(file, '[a](missing.md)')[0] ?? '', /docs\/upstream\/missing\.md does not exist/);
  });
});

describe('missingPathMentions', () => {
  const exists = (p: string): boolean => ['src/a.ts', 'test/b_test.ts', 'src/dir'].includes(p);
  /** The missing paths of `text`, as "line: path". */
  const missing = (text: string): string[] =>
    missingPathMentions('docs/x.md', text, exists).map(
      (p) => `${p.line}: ${p.message.replace(/^names (\S+), which is not in the repository$/, '$1')}`,
    );

  it('names a path that is not there, with its line, and accepts one that is', () => {
    assert.deepEqual(missing('# Title\n\nThe check is in `src/a.ts`;\nthe flags in `src/flags.ts`.\n'), [
      '4: src/flags.ts',
    ]);
    assert.deepEqual(missing('- `src/dir/` and `src/dir`.\n- `src/lost/`\n'), ['2: src/lost/']);
  });

  it("takes a compiled name for its source and a test's name for its file", () => {
    assert.deepEqual(missing('Run `src/a.js` and `test/b_test`.'), []);
  });

  it("leaves alone a paragraph telling of a file's past, and another project's path", () => {
    assert.deepEqual(missing('- Removed: the stand-ins\n  (`src/old.ts`).\n- Kept: `src/new.ts`.\n'), [
      '3: src/new.ts',
    ]);
    assert.deepEqual(missing('From harvester/harvester `deploy/charts/x.yaml`; ours `deploy/y`.'), [
      '1: deploy/y',
    ]);
  });
});

describe('inRepository', () => {
  const exists = inRepository(
    ['src/a.ts', 'docs/decisions/0001-x.md'],
    '# outputs\nnode_modules/\n/release/\nbench/results/\n*.log\n',
  );
  it('knows tracked files and the folders holding them, and the output folders .gitignore names', () => {
    for (const p of [
      'src/a.ts',
      'src',
      'src/',
      'docs/decisions/',
      'bench/results/',
      'bench/results/x.json',
      'release',
    ])
      assert.ok(exists(p), p);
    for (const p of ['src/b.ts', 'docs/dec', 'bench', 'x.log', 'src/a']) assert.ok(!exists(p), p);
  });
});

describe('unindexedRecords', () => {
  it('names the decision records the index does not link', () => {
    const index = '| [0001](0001-a.md) | A |';
    assert.deepEqual(unindexedRecords(index, ['0001-a.md', '0002-b.md', 'README.md']), ['0002-b.md']);
  });
});

describe('unlinkedPages', () => {
  it('names the pages the README does not link, anchors and fragments aside', () => {
    const readme = '[a](docs/a.md#x) [b](./docs/b.md) [up](docs/upstream/README.md)';
    assert.deepEqual(unlinkedPages(readme, ['docs/a.md', 'docs/b.md', 'docs/c.md']), ['docs/c.md']);
  });
});

describe('the repository', () => {
  const root = repoRoot();
  const files = repositoryFiles(root);
  // What every clone has (tracked files, the output folders .gitignore names), not what this
  // checkout happens to hold: every reference check answers the same on a clean clone.
  const tracked = execFileSync('git', ['ls-files'], { cwd: root, encoding: 'utf8' }).split('\n');
  const exists = inRepository(tracked, fs.readFileSync(path.join(root, '.gitignore'), 'utf8'));
  const repo = viewOf(files, exists);

  it('points at nothing outside itself and at no missing heading', () => {
    const problems = [...files].flatMap(([file, text]) => referenceProblems(file, text, repo));
    assert.deepEqual(
      problems.map((p) => `${p.file}:${p.line}: ${p.message}`),
      [],
    );
  });

  it('names only files that exist in its Markdown pages (docs/upstream names upstream files)', () => {
    const pages = [...files].filter(([file]) => file.endsWith('.md') && !file.startsWith('docs/upstream/'));
    assert.ok(pages.length > 40, `only ${pages.length} pages scanned`);
    const problems = pages.flatMap(([file, text]) => missingPathMentions(file, text, exists));
    assert.deepEqual(
      problems.map((p) => `${p.file}:${p.line}: ${p.message}`),
      [],
    );
  });

  it('links every page of docs/ from the README, so the manual is reachable from it', () => {
    const pages = fs
      .readdirSync(path.join(root, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`)
      .concat(['docs/decisions/README.md', 'docs/upstream/README.md']);
    assert.ok(pages.length > 10, `only ${pages.length} pages found`);
    assert.deepEqual(unlinkedPages(files.get('README.md') ?? '', pages), []);
  });

  it('keeps the README to a few screens; the manual lives in docs/', () => {
    const size = Buffer.byteLength(files.get('README.md') ?? '');
    assert.ok(size > 4_000 && size <= 15 * 1024, `README.md is ${size} bytes`);
  });

  it('lists every decision record in docs/decisions/README.md', () => {
    const records = fs.readdirSync(path.join(root, 'docs/decisions'));
    assert.ok(records.length > 6, 'the decision records should be found');
    assert.deepEqual(unindexedRecords(files.get('docs/decisions/README.md') ?? '', records), []);
  });

  it('was really scanned: the code cites docs/upstream headings', () => {
    assert.ok(files.size > 200, `only ${files.size} files scanned`);
    const citations = [...files]
      .filter(([file]) => !file.startsWith('docs/'))
      .reduce((n, [, text]) => n + (text.match(/docs\/upstream\/[\w.-]+\.md#[\w-]+/g)?.length ?? 0), 0);
    assert.ok(citations >= 25, `only ${citations} citations of docs/upstream headings outside docs/`);
  });
});
