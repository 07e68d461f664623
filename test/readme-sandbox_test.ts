// docs/sandbox-by-hand.md (linked from the README), followed literally: every command of its sh blocks,
// in order, in one bash session started at the repository root (so `eval "$(…sandbox env)"`
// carries over, as in a person's terminal), the block marked `readme-test: background`
// started first as the "first terminal". Each command must exit 0 and print what its
// `# expect:` lines say (and nothing its `# expect no:` lines name). The page cannot
// drift from what the sandbox does: change one, and this fails until the other follows.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { jobBinaries } from '../sandbox/rancher-machine/binaries.js';
import { rancherMachineSkipReason } from '../sandbox/rancher-machine/rancher-machine.js';
import { repoRoot } from '../sandbox/repo.js';
import { recordOutput } from '../sandbox/secret-ledger.js';

export interface ReadmeCommand {
  text: string;
  expect: string[];
  expectNot: string[];
  /** The page's line it starts on (for failure messages). */
  line: number;
}

export interface ReadmeBlock {
  background: boolean;
  commands: ReadmeCommand[];
}

/** The page holding the commands (the README links it). */
const PAGE = 'docs/sandbox-by-hand.md';
const START = '<!-- readme-test: start';
const END = '<!-- readme-test: end -->';
const BACKGROUND = '<!-- readme-test: background -->';

/** One sh block from the line after its fence: its commands, and the index of its closing fence. */
function readBlock(lines: string[], from: number, to: number, background: boolean): [ReadmeBlock, number] {
  const block: ReadmeBlock = { background, commands: [] };
  let pending = '';
  let pendingLine = 0;
  let i = from;
  for (; i < to && (lines[i] ?? '').trim() !== '```'; i++) {
    const l = lines[i] ?? '';
    const expect = /^# expect: (.+)$/.exec(l)?.[1];
    const expectNot = /^# expect no: (.+)$/.exec(l)?.[1];
    const last = block.commands.at(-1);
    if (expect || expectNot) {
      if (!last) throw new Error(`${PAGE} line ${i + 1}: an expectation before any command`);
      if (expect) last.expect.push(expect);
      if (expectNot) last.expectNot.push(expectNot);
    } else if (l.startsWith('#') || !l.trim()) continue;
    else if (pending || l.endsWith('\\')) {
      if (!pending) pendingLine = i + 1;
      pending += `${l}\n`;
      if (!l.endsWith('\\')) {
        block.commands.push({ text: pending.trimEnd(), expect: [], expectNot: [], line: pendingLine });
        pending = '';
      }
    } else block.commands.push({ text: l, expect: [], expectNot: [], line: i + 1 });
  }
  return [block, i];
}

/** The sh blocks between the start and end markers, as commands with their expectations. */
export function readmeBlocks(markdown: string): ReadmeBlock[] {
  const lines = markdown.split('\n');
  const from = lines.findIndex((l) => l.startsWith(START));
  const to = lines.findIndex((l) => l.startsWith(END));
  if (from < 0 || to < from) throw new Error(`${PAGE} has no readme-test start/end markers`);
  const blocks: ReadmeBlock[] = [];
  let previous = '';
  for (let i = from + 1; i < to; i++) {
    const line = lines[i] ?? '';
    if (line.trim() !== '```sh') {
      if (line.trim()) previous = line.trim();
      continue;
    }
    const [block, end] = readBlock(lines, i + 1, to, previous === BACKGROUND);
    blocks.push(block);
    i = end;
    previous = '';
  }
  return blocks;
}

const skip = rancherMachineSkipReason();
const README = path.join(repoRoot(), PAGE);

/** kubectl on PATH, or the one scripts/setup-kubectl.sh built. */
function pathWithKubectl(): string {
  const base = process.env['PATH'] ?? '/usr/bin:/bin';
  if (spawnSync('bash', ['-c', 'command -v kubectl'], { env: { PATH: base } }).status === 0) return base;
  const built = spawnSync('bash', ['scripts/setup-kubectl.sh'], { cwd: repoRoot(), encoding: 'utf8' });
  if (built.status !== 0)
    throw new Error(`no kubectl on PATH and scripts/setup-kubectl.sh failed: ${built.stderr}`);
  return `${path.dirname(built.stdout.trim().split('\n').pop() ?? '')}${path.delimiter}${base}`;
}

interface Ran {
  command: ReadmeCommand;
  code: number;
  output: string;
}

/** Runs the commands in one bash, each between marker lines carrying a nonce and its exit code. */
function runSession(commands: ReadmeCommand[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<Ran[]> {
  const nonce = crypto.randomBytes(6).toString('hex');
  const script = commands
    .map((c, i) => `echo "@@${nonce} begin ${i}"\n${c.text} 2>&1 </dev/null\necho "@@${nonce} end ${i} $?"`)
    .join('\n');
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['--noprofile', '--norc', '-c', script], {
      cwd: repoRoot(),
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      if (process.env['README_TEST_LOG']) process.stderr.write(d);
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', reject);
    child.once('close', () => {
      clearTimeout(timer);
      recordOutput('readme sandbox session', out);
      const ran: Ran[] = [];
      for (const [i, command] of commands.entries()) {
        const begin = out.indexOf(`@@${nonce} begin ${i}\n`);
        const end = new RegExp(`@@${nonce} end ${i} (\\d+)\\n`).exec(out);
        if (begin < 0 || !end) break;
        ran.push({
          command,
          code: Number(end[1]),
          output: out.slice(begin, end.index).split('\n').slice(1).join('\n'),
        });
      }
      resolve(ran);
    });
  });
}

function waitExit(child: ChildProcess, timeoutMs: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), timeoutMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

describe('docs/sandbox-by-hand.md: the sandbox by hand', { timeout: 20 * 60_000 }, () => {
  it('finds its commands and expectations between the markers', () => {
    const blocks = readmeBlocks(fs.readFileSync(README, 'utf8'));
    assert.equal(blocks.filter((b) => b.background).length, 1, 'one command runs in the first terminal');
    assert.deepEqual(
      blocks.find((b) => b.background)?.commands.map((c) => c.text),
      ['npm run sandbox up'],
    );
    const commands = blocks.flatMap((b) => (b.background ? [] : b.commands));
    assert.match(commands[0]?.text ?? '', /^eval "\$\(npm run --silent sandbox env\)"$/);
    assert.equal(commands.at(-1)?.text, 'npm run sandbox down');
    assert.ok(commands.filter((c) => c.expect.length > 0).length >= 20, 'most commands say what they print');
    assert.deepEqual(
      readmeBlocks(
        [
          '<!-- readme-test: start -->',
          '```sh',
          'echo a \\',
          '  b',
          '# expect: a b',
          '# expect no: c',
          '```',
          END,
        ].join('\n'),
      ),
      [
        {
          background: false,
          commands: [{ text: 'echo a \\\n  b', expect: ['a b'], expectNot: ['c'], line: 3 }],
        },
      ],
    );
  });

  if (skip) {
    it('runs them literally against a sandbox', { skip }, () => undefined);
    return;
  }
  before(async () => void (await jobBinaries(() => undefined)), { timeout: 15 * 60_000 });

  it(
    'runs them literally against a sandbox, and each prints what the page says',
    { timeout: 10 * 60_000 },
    async () => {
      const blocks = readmeBlocks(fs.readFileSync(README, 'utf8'));
      const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-readme-sandbox-'));
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        PATH: pathWithKubectl(),
        HARVESTER_MACHINE_SANDBOX_DIR: stateDir,
      };
      delete env['KUBECONFIG'];
      const background = blocks.find((b) => b.background)?.commands[0]?.text ?? '';
      const up = spawn('bash', ['--noprofile', '--norc', '-c', background], {
        cwd: repoRoot(),
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
      let upOutput = '';
      up.stdout?.setEncoding('utf8').on('data', (d: string) => (upOutput += d));
      up.stderr?.setEncoding('utf8').on('data', (d: string) => (upOutput += d));
      try {
        const commands = blocks.flatMap((b) => (b.background ? [] : b.commands));
        const t0 = Date.now();
        const ran = await runSession(commands, env, 8 * 60_000);
        for (const r of ran) {
          const where = `${PAGE} line ${r.command.line}: ${r.command.text}`;
          assert.equal(
            r.code,
            0,
            `${where} exited ${r.code}:\n${r.output}\n--- first terminal ---\n${upOutput.slice(-4000)}`,
          );
          for (const text of r.command.expect)
            assert.ok(r.output.includes(text), `${where} should print "${text}":\n${r.output}`);
          for (const text of r.command.expectNot)
            assert.ok(!r.output.includes(text), `${where} should not print "${text}":\n${r.output}`);
        }
        assert.equal(
          ran.length,
          commands.length,
          `only ${ran.length} of ${commands.length} commands ran:\n${upOutput.slice(-4000)}`,
        );
        process.stderr.write(
          `README sandbox session: ${commands.length} commands in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`,
        );
        assert.ok(await waitExit(up, 60_000), "the first terminal's sandbox up ended after sandbox down");
        assert.equal(up.exitCode, 0, upOutput.slice(-2000));
        assert.equal(fs.existsSync(stateDir), false, 'sandbox down removed the state directory');
      } finally {
        recordOutput('readme sandbox up', upOutput);
        if (up.exitCode === null) {
          spawnSync(process.execPath, ['dist/sandbox/bin/sandbox.js', 'down'], {
            cwd: repoRoot(),
            env,
            timeout: 90_000,
          });
          if (up.pid) {
            try {
              process.kill(-up.pid, 'SIGKILL');
            } catch {
              // already gone
            }
          }
        }
        fs.rmSync(stateDir, { recursive: true, force: true });
      }
    },
  );
});
