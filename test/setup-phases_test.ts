// The set-up a newcomer reads (scripts/setup.sh, scripts/setup-phases.sh): one line per phase
// with its cold estimate and its time, the noise in a log, a failure that names the phase and
// shows the log's path and last lines; and the walkthrough's mode builds none of what only the
// tests and the release need. Nothing here builds anything: phases run `bash -c` one-liners in
// a temp directory, and the modes are compared through `setup.sh --list`. Each bash gets no
// stdin: Debian's bash reads ~/.bashrc when its stdin is a socket, as Node's pipes are.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CAPI_RANCHER_2_13, CAPI_V1BETA2 } from '../sandbox/capi/versions.js';
import { KUBEVIRT_VERSION } from '../sandbox/kubevirt/version.js';
import { repoRoot } from '../sandbox/repo.js';

const PHASES = path.join(repoRoot(), 'scripts', 'setup-phases.sh');
const SETUP = path.join(repoRoot(), 'scripts', 'setup.sh');

/** Runs `script` in bash with the phase runner sourced, `set -euo pipefail` as setup.sh has it. */
function withPhases(dir: string, script: string): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(
    'bash',
    ['-c', `set -euo pipefail; . "$1"; SETUP_LOG="$2"; ${script}`, 'x', PHASES, log(dir)],
    {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      cwd: dir,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    },
  );
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

const log = (dir: string): string => path.join(dir, 'setup.log');

/**
 * A PATH holding only what reading the scripts takes (bash, sed, head, dirname): `--list` must
 * run no npm, apt, Go or Node, and without them a set-up that ignored `--list` stops at once.
 */
function readOnlyPath(dir: string): string {
  const bin = path.join(dir, 'bin');
  fs.mkdirSync(bin, { recursive: true });
  for (const tool of ['bash', 'sed', 'head', 'dirname']) {
    const found = spawnSync('bash', ['-c', `command -v ${tool}`], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    if (!fs.existsSync(path.join(bin, tool))) fs.symlinkSync(found.stdout.trim(), path.join(bin, tool));
  }
  return bin;
}

function setup(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): { status: number | null; stdout: string; stderr: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-setup-list-'));
  try {
    const result = spawnSync('bash', [SETUP, ...args], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH: readOnlyPath(dir), HOME: dir, ...env },
    });
    return { status: result.status, stdout: result.stdout, stderr: result.stderr };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function listPhases(mode: string, env: NodeJS.ProcessEnv = {}): string[] {
  const result = setup(['--for', mode, '--list'], env);
  assert.equal(result.status, 0, result.stderr);
  assert.equal(result.stdout, '', 'the listing goes to stderr, as the phase lines do');
  return result.stderr.trimEnd().split('\n');
}

describe('set-up phases', () => {
  let dir = '';
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-setup-phases-'));
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('prints one line per phase, with its cold estimate and its time; the output goes to the log', () => {
    const run = withPhases(
      dir,
      `phase "fetch the things" 120 bash -c 'for i in 1 2 3; do echo "go: downloading thing$i"; echo "apt noise $i" >&2; done'; phase "second" 5 true; echo done`,
    );
    assert.equal(run.status, 0, run.stderr);
    assert.equal(run.stdout, 'done\n');
    const lines = run.stderr.trimEnd().split('\n');
    assert.equal(lines.length, 2, run.stderr);
    assert.match(lines[0]!, /^setup: fetch the things \(cold ~120 s\) \.\.\. \d+\.\d s$/);
    assert.match(lines[1]!, /^setup: second \(cold ~5 s\) \.\.\. \d+\.\d s$/);
    const logged = fs.readFileSync(log(dir), 'utf8');
    for (const noise of ['go: downloading thing3', 'apt noise 2']) assert.ok(logged.includes(noise), noise);
  });

  it('on failure: names the phase, shows the log path and the last lines, exits with the status', () => {
    const run = withPhases(
      dir,
      `phase "fine" 1 echo earlier-phase-output; phase "build the widget" 300 bash -c 'echo compiling; echo "error: widget.go:3: undefined: gear" >&2; exit 7'; echo not-reached`,
    );
    assert.equal(run.status, 7);
    assert.equal(run.stdout, '');
    const lines = run.stderr.trimEnd().split('\n');
    assert.match(lines[0]!, /^setup: fine \(cold ~1 s\) \.\.\. \d+\.\d s$/);
    assert.match(
      lines[1]!,
      /^setup: build the widget \(cold ~300 s\) \.\.\. failed after \d+\.\d s \(exit 7\)$/,
    );
    assert.equal(
      lines[2],
      `setup: phase 'build the widget' failed; its output is in ${log(dir)}, the last lines:`,
    );
    assert.deepEqual(lines.slice(3), ['  | compiling', '  | error: widget.go:3: undefined: gear']);
    assert.ok(!run.stderr.includes('earlier-phase-output'), "only the failed phase's lines are shown");
  });

  it('a phase that fails silently says so, with the log path', () => {
    const run = withPhases(dir, `phase "quiet" 1 bash -c 'exit 4'`);
    assert.equal(run.status, 4);
    assert.equal(
      run.stderr.trimEnd().split('\n')[1],
      `setup: phase 'quiet' failed and printed nothing (log: ${log(dir)})`,
    );
  });

  it('a shell function as a phase stops at its first failing command', () => {
    const run = withPhases(dir, `f() { echo one; false; echo should-not-run; }; phase "function" 2 f`);
    assert.equal(run.status, 1);
    assert.match(run.stderr, /^setup: function \(cold ~2 s\) \.\.\. failed after/);
    assert.ok(!fs.readFileSync(log(dir), 'utf8').includes('should-not-run'));
  });
});

describe('set-up modes', () => {
  const helm = /helm/i;
  const releaseTools = /buildah|podman|skopeo|docker-registry/;
  const proxies = /squid|microsocks/;
  const kubectl = /kubectl/;

  it("the walkthrough builds one Cluster API version, KubeVirt, Harvester's own processes and the job binaries; no tests-only tools", () => {
    const lines = listPhases('walkthrough');
    for (const line of lines) assert.match(line, /^setup: .+ \(cold ~\d+ s\)$/);
    const all = lines.join('\n');
    for (const notWanted of [helm, releaseTools, proxies, kubectl]) assert.doesNotMatch(all, notWanted);
    assert.ok(!all.includes(CAPI_V1BETA2.version), 'no second Cluster API version');
    assert.equal(lines.filter((l) => l.includes('Cluster API')).length, 1);
    assert.ok(all.includes(`Cluster API manager ${CAPI_RANCHER_2_13.version}`), all);
    assert.ok(all.includes(`KubeVirt virt-api and virt-controller ${KUBEVIRT_VERSION}`), all);
    // The walkthrough runs on Harvester's own webhook and controllers (docs/decisions/0023).
    assert.match(all, /Harvester v\S+'s own harvester and webhook/);
    assert.match(all, /control-plane build/);
    assert.match(all, /rancher-machine v\S+ and the plugin executable/);
    assert.match(
      lines.at(-1)!,
      /rancher-machine/,
      'the job binaries are built from the compiled sources, last',
    );
  });

  it("the walkthrough's Cluster API follows HARVESTER_MACHINE_CAPI_VERSION, as the sandbox does", () => {
    const all = listPhases('walkthrough', { HARVESTER_MACHINE_CAPI_VERSION: CAPI_V1BETA2.version }).join(
      '\n',
    );
    assert.ok(all.includes(`Cluster API manager ${CAPI_V1BETA2.version}`), all);
    assert.ok(!all.includes(CAPI_RANCHER_2_13.version), all);
  });

  it('the tests (and a bare setup.sh) set up everything the suite needs', () => {
    const lines = listPhases('tests');
    const all = lines.join('\n');
    for (const wanted of [helm, releaseTools, proxies, kubectl, /control-plane build/])
      assert.match(all, wanted);
    for (const capi of [CAPI_RANCHER_2_13, CAPI_V1BETA2])
      assert.ok(all.includes(`Cluster API manager ${capi.version}`));
    assert.ok(all.includes(KUBEVIRT_VERSION));
    assert.match(
      lines.at(-1)!,
      /rancher-machine v\S+, the plugin executable and the release artifacts/,
      'the job binaries and the release are built from the compiled sources, last',
    );
    const bare = setup(['--list']);
    assert.equal(bare.stderr.trimEnd(), all);
  });

  it('refuses an unknown mode with its usage', () => {
    const result = setup(['--for', 'release']);
    assert.equal(result.status, 2);
    assert.match(result.stderr, /^usage: setup\.sh \[--for walkthrough\|tests\] \[--list\]/);
  });
});
