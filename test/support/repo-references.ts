// What a file of the repository may point at: nothing outside the repository (the
// background notes and the seed reports are not part of it), and only headings that exist
// in docs/upstream/*.md. Pure: the caller reads the files and passes their text.

export interface ReferenceProblem {
  file: string;
  line: number;
  message: string;
}

/** The page names of docs/upstream/; a bare mention of one must go through that path. */
const UPSTREAM_PAGES = [
  'cluster-api',
  'control-plane',
  'driver-flags',
  'go-driver',
  'harvester-kubevirt',
  'plugin-protocol',
  'rancher',
  'seeds',
  'user-asks',
];

const OUTSIDE_PATTERNS: ReadonlyArray<{ re: RegExp; what: string }> = [
  { re: /(?<![\w./-])spec\/[\w.-]+\.md\b/g, what: 'a background spec file outside the repository' },
  {
    re: /(?:\.\.\/|\/work\/)shared\b|\bshared\/(?:spec|seeds)\b/g,
    what: 'the shared background directory outside the repository',
  },
  { re: /(?<![\w./-])seeds\/[\w.-]+/g, what: 'a seed report outside the repository' },
  { re: /\bspec\s+§/g, what: 'a section number of a background spec' },
];

const BARE_PAGE = new RegExp(`(?<![\\w/.-])(?:${UPSTREAM_PAGES.join('|')})\\.md\\b`, 'g');
const UPSTREAM_REF = /docs\/upstream\/([\w.-]+\.md)(?:#([\w-]*))?/g;
const MARKDOWN_LINK = /\]\(([^)\s#]*)(?:#([^)\s]*))?\)/g;

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
export function githubSlug(heading: string): string {
  const rendered = heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[`*]/g, '')
    .trim();
  return rendered
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Every heading anchor of a Markdown text, with GitHub's -1, -2 … for repeated headings. */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fence: string | undefined;
  for (const line of markdown.split('\n')) {
    const f = /^\s*(```+|~~~+)/.exec(line);
    if (f?.[1]) {
      if (fence === undefined) fence = f[1];
      else if (f[1].startsWith(fence)) fence = undefined;
      continue;
    }
    if (fence !== undefined) continue;
    const h = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!h?.[1]) continue;
    const slug = githubSlug(h[1]);
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return anchors;
}

/** "a/b/../c.md" relative to "docs/x.md" → "docs/c.md"; undefined when it leaves the repository. */
export function resolveRelative(fromFile: string, target: string): string | undefined {
  const parts = fromFile.split('/').slice(0, -1);
  for (const p of target.split('/')) {
    if (p === '' || p === '.') continue;
    if (p === '..') {
      if (parts.length === 0) return undefined;
      parts.pop();
    } else parts.push(p);
  }
  return parts.join('/');
}

export interface RepoView {
  /** Anchors of every Markdown file, by repository-relative path. */
  markdown: ReadonlyMap<string, ReadonlySet<string>>;
  /** Whether a repository-relative path exists (file or directory). */
  exists(path: string): boolean;
}

function lineOf(text: string, index: number): number {
  let line = 1;
  for (let i = 0; i < index; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

function checkAnchor(target: string, anchor: string | undefined, repo: RepoView): string | undefined {
  const anchors = repo.markdown.get(target);
  if (!anchors) return repo.exists(target) ? undefined : `${target} does not exist`;
  if (anchor === undefined || anchor === '') return undefined;
  return anchors.has(anchor) ? undefined : `${target} has no heading with anchor #${anchor}`;
}

/** The problems of one file: references outside the repository and dangling anchors. */
export function referenceProblems(file: string, text: string, repo: RepoView): ReferenceProblem[] {
  const problems: ReferenceProblem[] = [];
  const report = (index: number, message: string): void => {
    problems.push({ file, line: lineOf(text, index), message });
  };
  for (const { re, what } of OUTSIDE_PATTERNS) {
    for (const m of text.matchAll(re))
      report(m.index, `"${m[0]}" points at ${what}; write the fact into docs/upstream/ and cite its heading`);
  }
  if (!file.startsWith('docs/upstream/')) {
    for (const m of text.matchAll(BARE_PAGE))
      report(m.index, `"${m[0]}" is ambiguous; cite docs/upstream/${m[0]}#<heading>`);
  }
  for (const m of text.matchAll(UPSTREAM_REF)) {
    const problem = checkAnchor(`docs/upstream/${m[1] ?? ''}`, m[2], repo);
    if (problem) report(m.index, problem);
  }
  if (file.endsWith('.md')) {
    for (const m of text.matchAll(MARKDOWN_LINK)) {
      const target = m[1] ?? '';
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // a URL
      const resolved = target === '' ? file : resolveRelative(file, target);
      if (resolved === undefined) {
        report(m.index, `link "${target}" leaves the repository`);
        continue;
      }
      const problem = checkAnchor(resolved, m[2], repo);
      if (problem) report(m.index, problem);
    }
  }
  return problems;
}

/** The decision records (NNNN-title.md) that the index does not link to. */
export function unindexedRecords(indexText: string, recordFiles: readonly string[]): string[] {
  return recordFiles.filter((f) => /^\d{4}-.*\.md$/.test(f) && !indexText.includes(`](${f})`));
}

/** The pages (paths relative to the README's folder) that the README links to nowhere. */
export function unlinkedPages(readme: string, pages: readonly string[]): string[] {
  const linked = new Set(
    [...readme.matchAll(MARKDOWN_LINK)].map((m) => resolveRelative('README.md', m[1] ?? '')),
  );
  return pages.filter((page) => !linked.has(page));
}

/** A repository path written in backquotes: `src/…`, `sandbox/…`, and the other top folders. */
const REPO_PATH = /`((?:src|sandbox|test|bench|scripts|deploy|docs)\/[\w./-]*)`/g;
/** Words of a file's past or of a road not taken: such a paragraph may name a file not there. */
const HISTORY = /\b(?:was|were|had|gone|removed|renamed|moved|deleted|replaced|would)\b/i;
/** "harvester/harvester `deploy/…`": a path in another project's repository. */
const OTHER_REPOSITORY = /[\w-]+\/[\w.-]+\s+$/;

/** A page's paragraphs and list items (a table row is one), each with its first line. */
function blocksOf(text: string): Array<{ line: number; text: string }> {
  const blocks: Array<{ line: number; text: string }> = [];
  text.split('\n').forEach((line, i) => {
    const starts = /^\s*$|^\s*(?:[-*|>]|\d+\.)\s|^#/.test(line);
    const last = blocks.at(-1);
    if (starts || !last || last.text.trim() === '') blocks.push({ line: i + 1, text: line });
    else last.text += `\n${line}`;
  });
  return blocks;
}

/**
 * The repository paths a Markdown page names that do not exist, so that a reader following
 * one finds the file. A compiled `.js` name counts for its `.ts` source, a test's name for its
 * file; a paragraph telling of a file's past (or of an option not taken) and a path in another
 * project's repository are left alone.
 */
export function missingPathMentions(
  file: string,
  text: string,
  exists: (path: string) => boolean,
): ReferenceProblem[] {
  const found = (p: string): boolean =>
    [p.replace(/\/$/, ''), p.replace(/\.js$/, '.ts'), `${p}.ts`].some((candidate) => exists(candidate));
  return blocksOf(text)
    .filter((block) => !HISTORY.test(block.text))
    .flatMap((block) =>
      [...block.text.matchAll(REPO_PATH)]
        .filter((m) => !OTHER_REPOSITORY.test(block.text.slice(0, m.index)))
        .map((m) => ({ path: (m[1] ?? '').replace(/\.+$/, ''), at: m.index }))
        .filter(({ path }) => !found(path))
        .map(({ path, at }) => ({
          file,
          line: block.line + (block.text.slice(0, at).match(/\n/g)?.length ?? 0),
          message: `names ${path}, which is not in the repository`,
        })),
    );
}

/**
 * Whether a repository path is there for every reader: a tracked file or a folder holding one,
 * or a place the project writes its output to (a folder `.gitignore` names, as `bench/results/`).
 * Files present in one checkout only do not count, so the answer is the same on every clone.
 */
export function inRepository(trackedFiles: readonly string[], gitignore: string): (path: string) => boolean {
  const known = new Set<string>();
  for (const file of trackedFiles) {
    known.add(file);
    for (let i = file.indexOf('/'); i > 0; i = file.indexOf('/', i + 1)) known.add(file.slice(0, i));
  }
  const outputs = gitignore
    .split('\n')
    .map((line) => line.trim().replace(/^\//, ''))
    .filter((line) => line.endsWith('/') && !line.startsWith('#'));
  return (path) => {
    const bare = path.replace(/\/$/, '');
    return known.has(bare) || outputs.some((dir) => `${bare}/`.startsWith(dir));
  };
}
