// The sandbox command as a person uses it: `up` prints four export lines naming private
// kubeconfig files that work (`env` prints them again), and `down` (from another shell)
// stops it all, leaving no process, no temp directory and no state behind.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { KubeClient } from '../../src/kube/client.js';
import { Resources } from '../../src/kube/resources.js';

const BIN = path.join(path.dirname(fileURLToPath(import.meta.url)), 'sandbox.js');

/** Resolves with stdout once `count` lines arrived (or rejects when the process exits first). */
function firstLines(child: ReturnType<typeof spawn>, count: number, timeoutMs: number): Promise<string[]> {
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(
      () => reject(new Error(`no ${count} lines within ${timeoutMs} ms: ${out}`)),
      timeoutMs,
    );
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const lines = out.split('\n').filter(Boolean);
      if (lines.length >= count) {
        clearTimeout(timer);
        resolve(lines);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`sandbox up exited (${code}) before printing: ${out}`));
    });
  });
}

/** Runs a command without blocking this process (which must keep reaping `up`). */
function run(args: string[], env: NodeJS.ProcessEnv): Promise<{ status: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    child.once('exit', (status) => resolve({ status, stderr }));
  });
}

/** Runs a command and keeps its stdout. */
function runOut(args: string[], env: NodeJS.ProcessEnv): Promise<{ status: number | null; stdout: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'ignore'] });
    let stdout = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.once('exit', (status) => resolve({ status, stdout }));
  });
}

describe('sandbox command', () => {
  it('up prints the export lines and stays up; down stops everything and cleans up', async () => {
    const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-sandbox-state-'));
    const env = { ...process.env, HARVESTER_MACHINE_SANDBOX_DIR: stateDir };
    const up = spawn(process.execPath, [BIN, 'up'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    up.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => up.once('exit', (code) => resolve(code)));
    try {
      const lines = await firstLines(up, 4, 180_000);
      const exports = Object.fromEntries(
        lines.map((line) => {
          const match = /^export ([A-Z_]+)=(.+)$/.exec(line);
          assert.ok(match, `an export line: ${line}`);
          return [match[1], match[2]];
        }),
      ) as Record<string, string>;
      assert.deepEqual(Object.keys(exports).sort(), [
        'HARVESTER_ADMIN_KUBECONFIG',
        'HARVESTER_KUBECONFIG',
        'HARVESTER_VIA_RANCHER_KUBECONFIG',
        'RANCHER_KUBECONFIG',
      ]);
      for (const file of Object.values(exports)) {
        assert.equal(path.dirname(file), stateDir);
        assert.equal(fs.statSync(file).mode & 0o777, 0o600, `${file} is readable by its owner only`);
      }
      const state = JSON.parse(fs.readFileSync(path.join(stateDir, 'state.json'), 'utf8')) as {
        pid: number;
        dirs: string[];
      };
      assert.equal(state.pid, up.pid);
      assert.ok(state.dirs.every((d) => fs.existsSync(d)));

      for (const variable of ['HARVESTER_KUBECONFIG', 'HARVESTER_VIA_RANCHER_KUBECONFIG']) {
        const client = KubeClient.fromKubeconfig(fs.readFileSync(exports[variable] ?? '', 'utf8'));
        try {
          assert.ok(await client.get(Resources.setting, { name: 'server-version' }), variable);
        } finally {
          client.close();
        }
      }
      // The operator's kubeconfig may do what the driver's user may not (read kube-system's Secrets).
      const operator = KubeClient.fromKubeconfig(
        fs.readFileSync(exports['HARVESTER_ADMIN_KUBECONFIG'] ?? '', 'utf8'),
      );
      const driverUser = KubeClient.fromKubeconfig(
        fs.readFileSync(exports['HARVESTER_KUBECONFIG'] ?? '', 'utf8'),
      );
      try {
        assert.ok((await operator.list(Resources.secret, { namespace: 'kube-system' })).items.length > 0);
        await assert.rejects(driverUser.list(Resources.secret, { namespace: 'kube-system' }), /forbidden/i);
      } finally {
        operator.close();
        driverUser.close();
      }
      const env2 = await runOut([BIN, 'env'], env);
      assert.deepEqual(env2.stdout.trim().split('\n'), lines, 'sandbox env prints the same export lines');
      const rancher = KubeClient.fromKubeconfig(fs.readFileSync(exports['RANCHER_KUBECONFIG'] ?? '', 'utf8'));
      try {
        assert.ok(await rancher.get(Resources.namespace, { name: 'cattle-global-data' }));
      } finally {
        rancher.close();
      }
      const second = await run([BIN, 'up'], env);
      assert.equal(second.status, 1, 'a second up refuses');
      assert.match(second.stderr, /already running \(pid \d+/);

      const down = await run([BIN, 'down'], env);
      assert.equal(down.status, 0, down.stderr);
      assert.equal(await exited, 0, stderr);
      // Its stop talked to live processes: nothing was killed under it (deferSignalsToOwner).
      const stopping = stderr.slice(stderr.indexOf('SIGTERM: stopping'));
      assert.match(stopping, /^SIGTERM: stopping[\s\S]*sandbox: stopped/, stderr);
      assert.doesNotMatch(stopping, /could not|cannot reach/, stopping);
      assert.equal(fs.existsSync(stateDir), false, 'the state directory is gone');
      for (const dir of state.dirs) {
        assert.equal(fs.existsSync(dir), false, `${dir} is gone`);
        assert.equal(spawnSync('pgrep', ['-f', dir]).status, 1, `no process of ${dir} is left`);
      }
      assert.equal(
        spawnSync('pgrep', ['-f', stateDir]).status,
        1,
        'no process of the state directory (the controller) is left',
      );
      assert.doesNotMatch(stderr, /kubeconfig-u-[a-z0-9]+:[a-z0-9]{16,}/, 'no token in the output');
    } finally {
      // On failure, stop it the way a person would (down also reaps what a killed up leaves).
      if (up.exitCode === null) spawnSync(process.execPath, [BIN, 'down'], { env, timeout: 90_000 });
      fs.rmSync(stateDir, { recursive: true, force: true });
    }
  });
});
