// `npm run bench`: every benchmark in bench/ (its top-level modules; helpers live in
// bench/support/), one after the other so that none disturbs another, and one combined report
// in bench/results/ (gitignored). A module that exports a run…Bench() function is imported and
// called, and what it returns goes into the report; a module that runs on its own when executed
// (a script with a main, exporting nothing) is run as a child process and its output goes into
// the report as text. A module that exports other things and no run…Bench() is a helper.
// `npm run bench -- driver plugin` runs only the modules whose file name contains one of the words.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const RESULTS = fileURLToPath(new URL('../../bench/results/', import.meta.url));
const EXPORTED_BENCH =
  /export\s+(?:async\s+)?function\s+(run\w*Bench)\s*\(|export\s*\{[^}]*\b(run\w*Bench)\b/;

interface BenchOutcome {
  module: string;
  seconds: number;
  ok: boolean;
  /** What an exported run…Bench() returned. */
  result?: unknown;
  /** What a script printed. */
  output?: string;
  error?: string;
}

function benchModules(filters: readonly string[]): string[] {
  return fs
    .readdirSync(HERE)
    .filter((f) => f.endsWith('.js') && f !== 'run.js')
    .filter((f) => {
      // A helper of the benchmarks exports things but no run…Bench().
      const source = fs.readFileSync(path.join(HERE, f), 'utf8');
      return EXPORTED_BENCH.test(source) || !/^export\b/m.test(source);
    })
    .filter((f) => filters.length === 0 || filters.some((w) => f.includes(w)))
    .sort((a, b) => order(a) - order(b) || a.localeCompare(b));
}

/** The quick ones first: a slow one failing late should not hide the others' figures. */
function order(file: string): number {
  if (file.startsWith('plugin')) return 0;
  if (file.startsWith('driver')) return 1;
  return 2;
}

async function runExported(file: string, fn: string): Promise<unknown> {
  const module = (await import(pathToFileURL(path.join(HERE, file)).href)) as Record<string, unknown>;
  const run = module[fn];
  if (typeof run !== 'function') throw new Error(`${file} does not export ${fn} as a function`);
  return (await (run as () => Promise<unknown>)()) ?? null;
}

function runScript(file: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(HERE, file)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const tee = (to: NodeJS.WriteStream) => (b: Buffer) => {
      output += b.toString();
      to.write(b);
    };
    child.stdout.on('data', tee(process.stdout));
    child.stderr.on('data', tee(process.stderr));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? 1, output }));
  });
}

async function main(filters: readonly string[]): Promise<number> {
  const modules = benchModules(filters);
  if (modules.length === 0) {
    console.error(`bench: no benchmark module matches ${filters.join(', ')}`);
    return 2;
  }
  console.log(`bench: ${modules.join(', ')}`);
  const outcomes: BenchOutcome[] = [];
  for (const file of modules) {
    const started = performance.now();
    const source = fs.readFileSync(path.join(HERE, file), 'utf8');
    const exported = EXPORTED_BENCH.exec(source);
    const fn = exported?.[1] ?? exported?.[2];
    console.log(`\n== ${file}${fn ? ` (${fn})` : ' (script)'}`);
    const outcome: BenchOutcome = { module: file, seconds: 0, ok: true };
    try {
      if (fn) outcome.result = await runExported(file, fn);
      else {
        const { code, output } = await runScript(file);
        outcome.output = output;
        outcome.ok = code === 0;
        if (code !== 0) outcome.error = `exited with code ${code}`;
      }
    } catch (err) {
      outcome.ok = false;
      outcome.error = err instanceof Error ? (err.stack ?? err.message) : String(err);
      console.error(`bench: ${file} failed: ${outcome.error}`);
    }
    outcome.seconds = Math.round((performance.now() - started) / 100) / 10;
    outcomes.push(outcome);
  }
  fs.mkdirSync(RESULTS, { recursive: true });
  const report = { date: new Date().toISOString(), node: process.version, benches: outcomes };
  const file = path.join(RESULTS, `bench-${report.date.replace(/[:.]/g, '-')}.json`);
  fs.writeFileSync(file, JSON.stringify(report, null, 2) + '\n');
  fs.copyFileSync(file, path.join(RESULTS, 'bench-report.json'));
  console.log(`\nbench: ${outcomes.filter((o) => o.ok).length}/${outcomes.length} ran; report ${file}`);
  return outcomes.every((o) => o.ok) ? 0 : 1;
}

main(process.argv.slice(2)).then(
  (code) => (process.exitCode = code),
  (err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  },
);
