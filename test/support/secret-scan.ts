// The secrets scan that scripts/test.sh runs after the suite:
//   node dist/test/support/secret-scan.js <scan dir>
// <scan dir> holds the ledger (ledger.jsonl: every secret the sandbox and the tests made,
// see secret-ledger.ts) and everything the suite printed or captured (the runner's output,
// captured/*.log). Every file but the ledger is searched for each ledger secret, as written
// and base64-encoded (a kubeconfig passed in HARVESTER_KUBECONFIG_CONTENT is base64), and for
// secrets nobody recorded but that have a recognizable form: PEM private keys (plain or
// base64), Rancher tokens (kubeconfig-u-…:<secret>) and bootstrap tokens (<id>.<secret>).
// A finding fails the run and is reported by file, line and kind, never by its value.
// It lives here (TypeScript, compiled and linted with the tests) rather than as an .mjs in
// scripts/: the lint's type-aware parser refuses files outside the TypeScript project.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

export const LEDGER_FILE = 'ledger.jsonl';

export interface LedgerEntry {
  /** What the secret is, e.g. "bootstrap token abc123" (never secret itself). */
  what: string;
  value: string;
}

export interface Finding {
  file: string;
  line: number;
  /** The ledger entry's description, or the pattern's name. */
  what: string;
  /** A masked hint: the first characters and the length, never the whole value. */
  hint: string;
}

interface Needle {
  what: string;
  text: string;
}

/** Shorter needles would match ordinary text; every secret we make is longer. */
const MIN_NEEDLE = 12;

/**
 * The parts of the base64 encoding of `value` that do not depend on what surrounds it, for
 * each of the three alignments it can have inside a longer encoded text.
 */
export function base64Fingerprints(value: string): string[] {
  const bytes = Buffer.from(value, 'utf8');
  const out: string[] = [];
  for (const [offset, firstClean] of [
    [0, 0],
    [1, 2],
    [2, 3],
  ] as const) {
    const padded = Buffer.concat([Buffer.alloc(offset), bytes]);
    const whole = Math.floor(padded.length / 3) * 4;
    const text = padded.toString('base64').slice(firstClean, whole);
    if (text.length >= MIN_NEEDLE) out.push(text);
  }
  return out;
}

const PEM_HEADERS = ['RSA PRIVATE KEY', 'PRIVATE KEY', 'EC PRIVATE KEY', 'OPENSSH PRIVATE KEY'].map(
  (kind) => `-----BEGIN ${kind}-----`,
);

/** Secrets recognizable by their form, recorded or not. */
const PATTERNS: Array<{ what: string; re: RegExp }> = [
  { what: 'a PEM private key', re: /-----BEGIN [A-Z ]*PRIVATE KEY-----/g },
  {
    what: 'a Rancher token (name:secret)',
    re: /\b(?:kubeconfig-u|kubeconfig-user|token)-[a-z0-9]+:[A-Za-z0-9]{16,}/g,
  },
  { what: 'a bootstrap token (id.secret)', re: /\b[a-z0-9]{6}\.[a-z0-9]{16}\b/g },
];

export function readLedger(file: string): LedgerEntry[] {
  if (!fs.existsSync(file)) return [];
  const entries: LedgerEntry[] = [];
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const entry = JSON.parse(line) as Partial<LedgerEntry>;
    if (typeof entry.what === 'string' && typeof entry.value === 'string') {
      entries.push({ what: entry.what, value: entry.value });
    }
  }
  return entries;
}

function needlesOf(entries: readonly LedgerEntry[]): Needle[] {
  const needles = new Map<string, Needle>();
  const add = (what: string, text: string): void => {
    if (text.length >= MIN_NEEDLE && !needles.has(text)) needles.set(text, { what, text });
  };
  for (const { what, value } of entries) {
    const trimmed = value.trim();
    add(what, trimmed);
    for (const b64 of base64Fingerprints(trimmed)) add(`${what} (base64)`, b64);
    // A PEM key leaks line by line as easily as whole.
    for (const line of trimmed.split('\n')) if (!line.startsWith('-----')) add(what, line.trim());
  }
  for (const header of PEM_HEADERS) {
    for (const b64 of base64Fingerprints(header)) add('a PEM private key (base64)', b64);
  }
  return [...needles.values()];
}

function mask(text: string): string {
  return `${text.slice(0, 4)}… (${text.length} characters)`;
}

/** Every place in `text` where a needle or a pattern occurs. */
export function scanText(text: string, file: string, needles: readonly Needle[]): Finding[] {
  const findings: Finding[] = [];
  // One pass over the text: needles are looked up by their first MIN_NEEDLE characters.
  const byPrefix = new Map<string, Needle[]>();
  for (const n of needles) {
    const key = n.text.slice(0, MIN_NEEDLE);
    byPrefix.set(key, [...(byPrefix.get(key) ?? []), n]);
  }
  const lines = text.split('\n');
  lines.forEach((line, index) => {
    const seen = new Set<string>();
    for (let at = 0; at + MIN_NEEDLE <= line.length; at++) {
      const candidates = byPrefix.get(line.slice(at, at + MIN_NEEDLE));
      for (const n of candidates ?? []) {
        if (!seen.has(n.what) && line.startsWith(n.text, at)) {
          seen.add(n.what);
          findings.push({ file, line: index + 1, what: n.what, hint: mask(n.text) });
        }
      }
    }
    for (const { what, re } of PATTERNS) {
      re.lastIndex = 0;
      for (const m of line.matchAll(re)) {
        if (!seen.has(what)) findings.push({ file, line: index + 1, what, hint: mask(m[0]) });
        seen.add(what);
      }
    }
  });
  return findings;
}

function filesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return filesUnder(full);
    return entry.isFile() && entry.name !== LEDGER_FILE ? [full] : [];
  });
}

export interface ScanResult {
  secrets: number;
  files: number;
  bytes: number;
  findings: Finding[];
}

export function scanDirectory(dir: string): ScanResult {
  const needles = needlesOf(readLedger(path.join(dir, LEDGER_FILE)));
  const result: ScanResult = { secrets: needles.length, files: 0, bytes: 0, findings: [] };
  for (const file of filesUnder(dir)) {
    const text = fs.readFileSync(file, 'utf8');
    result.files++;
    result.bytes += text.length;
    result.findings.push(...scanText(text, path.relative(dir, file), needles));
  }
  return result;
}

function main(dir: string | undefined): number {
  if (!dir || !fs.existsSync(dir)) {
    console.error('usage: secret-scan <directory holding ledger.jsonl and the output to scan>');
    return 2;
  }
  const { secrets, files, bytes, findings } = scanDirectory(dir);
  const scanned = `${secrets} secret forms from the ledger and ${PATTERNS.length} patterns, in ${files} files (${(bytes / 1_048_576).toFixed(1)} MiB)`;
  if (findings.length === 0) {
    console.log(`secrets scan: clean: ${scanned}`);
    return 0;
  }
  console.error(`secrets scan: FAILED: ${findings.length} secret(s) in the suite's output (${scanned}):`);
  for (const f of findings.slice(0, 50)) console.error(`  ${f.file}:${f.line}: ${f.what}: ${f.hint}`);
  if (findings.length > 50) console.error(`  … and ${findings.length - 50} more`);
  return 1;
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  process.exitCode = main(process.argv[2]);
}
