// The main job, end to end: `node dist/sandbox/bin/walkthrough.js` as a subprocess (the
// two job binaries built or found in the cache first, as the interop suites do), its exit
// code and the lines that tell both stories; and a Ctrl-C in the middle, after which
// nothing it started may be left running.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { jobBinaries } from '../sandbox/rancher-machine/binaries.js';
import { rancherMachineSkipReason } from '../sandbox/rancher-machine/rancher-machine.js';
import { repoRoot } from '../sandbox/repo.js';
import { recordOutput } from '../sandbox/secret-ledger.js';

const skip = rancherMachineSkipReason();
const WALKTHROUGH = path.join(repoRoot(), 'dist', 'sandbox', 'bin', 'walkthrough.js');

interface Started {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | NodeJS.Signals | null>;
}

function start(): Started {
  // The secrets ledger (HM_SECRET_LEDGER) is inherited: the tokens the walkthrough makes are
  // recorded there, and its output is scanned for them after the suite.
  const child = spawn(process.execPath, [WALKTHROUGH], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (output += d));
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (output += d));
  const exited = new Promise<number | NodeJS.Signals | null>((resolve) =>
    child.once('close', (code, signal) => resolve(code ?? signal)),
  );
  return { child, output: () => output, exited };
}

/** Kills it if it overruns, so a hung walkthrough fails the test instead of the suite. */
async function finished(run: Started, timeoutMs: number): Promise<number | NodeJS.Signals | null> {
  const timer = setTimeout(() => run.child.kill('SIGINT'), timeoutMs);
  try {
    return await run.exited;
  } finally {
    clearTimeout(timer);
    recordOutput('walkthrough', run.output());
  }
}

/** Every process below `pid` (from /proc: ppid is field 4 of /proc/<pid>/stat). */
function descendants(pid: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone meanwhile
    }
  }
  const found: number[] = [];
  const walk = (p: number): void => {
    for (const [child, parent] of parents)
      if (parent === p) {
        found.push(child);
        walk(child);
      }
  };
  walk(pid);
  return found;
}

const alive = (pid: number): boolean => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
};

const workDir = (output: string): string | undefined => /work directory (\S+)/.exec(output)?.[1];

describe('the walkthrough (npm run walkthrough)', { timeout: 20 * 60_000 }, () => {
  if (skip) {
    it('runs the walkthrough', { skip }, () => undefined);
    return;
  }
  before(async () => void (await jobBinaries(() => undefined)), { timeout: 15 * 60_000 });

  // On Harvester's own webhook and controllers (ADR 0023) the sandbox takes about a minute more to
  // start, and the run about 160 s alone on 2 shared cores.
  it(
    'tells both stories with every check passing, and stops everything',
    { timeout: 7 * 60_000 },
    async () => {
      const run = start();
      const code = await finished(run, 6 * 60_000);
      const out = run.output();
      assert.equal(code, 0, `the walkthrough exited ${String(code)}:\n${out}`);
      assert.match(out, /^Walkthrough passed: 11 steps, \d+ checks, [\d.]+ s in all\.$/m);
      assert.doesNotMatch(out, /✗|FAILED/);
      for (let step = 1; step <= 11; step++) assert.match(out, new RegExp(`── Step ${step}/11: .*\\n`));
      // Harvester's own webhook and controllers served it, not the stand-ins that play them.
      // (The narrator wraps long lines.)
      const flat = out.replace(/\s+/g, ' ');
      assert.match(flat, /Harvester v1\.8\.0's own webhook and controllers \+ stand-ins/);
      assert.match(
        flat,
        /its own webhook registered in [\d.]+ s, its controllers leading in [\d.]+ s; resident: harvester-webhook \d+ MiB, harvester \d+ MiB/,
      );

      // The first story: three rm jobs, each forcing the removal of all volumes; all gone, harv02's kept.
      const forced = [
        ...out.matchAll(
          /^\s+│ \((harv01-pool1-[a-z0-9-]+)\) Force the removal of all persistent volume claims$/gm,
        ),
      ];
      assert.equal(forced.length, 1, 'one rm job output is shown in full');
      const checked = [
        ...out.matchAll(
          /✓ rm job (harv01-pool1-[a-z0-9-]+): "\(\1\) Force the removal of all persistent volume claims"/g,
        ),
      ];
      assert.equal(new Set(checked.map((m) => m[1])).size, 3, 'each of the three rm jobs printed the line');
      assert.match(out, /✓ every volume of harv01 is gone \(7\/7: /);
      assert.match(out, /✓ every volume of harv02 is untouched \(2\)/);
      // The load balancers: harv01's deleted by the controller, its address freed; harv02's kept.
      assert.match(
        out.replace(/\s+/g, ' '),
        /controller harv01: \[HarvesterLoadBalancersDeleted\] deleted 1 load balancer\(s\) of guest cluster harv01 on Harvester \(default\/harv01-default-nginx-[0-9a-f]{8} for Service default\/nginx holding 192\.0\.2\.\d+ from IP pool/,
      );
      assert.match(out, /✓ harv01's load balancer\(s\) are gone: harv01-default-nginx-[0-9a-f]{8}/);
      assert.match(out, /✓ harv02's load balancer\(s\) stay: harv02-default-web-[0-9a-f]{8}/);
      assert.match(out, /✓ harv01's address is free again; only harv02's is taken/);

      // harv01's pool has fixed addresses on a VLAN without DHCP: three distinct ones, freed with the cluster.
      const fixed = [
        ...out.matchAll(
          /✓ VM (harv01-pool1-[a-z0-9-]+) has its own address of 192\.168\.100\.10-192\.168\.100\.19 \((192\.168\.100\.1\d)\), its claim owned by the VM/g,
        ),
      ];
      assert.equal(new Set(fixed.map((m) => m[2])).size, 3, 'three machines, three addresses');
      assert.equal(
        [
          ...out.matchAll(
            /✓ VM harv01-pool1-[a-z0-9-]+ and its virt-launcher pod carry the pool's label app=harv01-web/g,
          ),
        ].length,
        3,
      );
      assert.match(out, /✓ the addresses of harv01 are free again \(no claim left on vlan100\)/);

      // harv02's pool has a passed-through GPU: enabled as Harvester's UI does, asked for by resource, given.
      assert.match(out, /✓ passthrough enabled on harvester-sandbox-node-0-00003b000: bound to vfio-pci/);
      assert.match(
        out,
        /✓ VM harv02-pool1-[a-z0-9-]+ asks for nvidia\.com\/TU104GL_TESLA_T4 and was given harvester-sandbox-node-0-00003b000/,
      );

      // The second story: the clear error without the renewed credential, success with it.
      assert.match(out, /│ Error removing host "harv02-pool1-[a-z0-9-]+": Harvester credential rejected: /);
      assert.match(out, /✓ the error says nothing was changed/);
      assert.match(out, /✓ Harvester: VM harv02-pool1-[a-z0-9-]+ untouched/);
      assert.match(out, /✓ the retried rm job succeeded with the renewed credential \(token kubeconfig-u-/);
      assert.match(out, /✓ its hot-plugged workload volume is kept/);

      assert.match(out, /✓ cleanup controller stopped on SIGTERM \(exit 0\)/);
      assert.match(out, /✓ no plugin process left behind; temp directory removed/);
      const dir = workDir(out);
      assert.ok(dir && !fs.existsSync(dir), `the work directory ${dir ?? '(not printed)'} is removed`);
    },
  );

  it('stops everything it started on Ctrl-C', { timeout: 5 * 60_000 }, async () => {
    const run = start();
    const deadline = Date.now() + 240_000;
    while (!/── Step 3\/11/.test(run.output()) && Date.now() < deadline && run.child.exitCode === null)
      await new Promise((r) => setTimeout(r, 100));
    assert.match(run.output(), /── Step 3\/11/, `the walkthrough did not reach step 3:\n${run.output()}`);
    await new Promise((r) => setTimeout(r, 1_000)); // the create jobs are running now
    const started = descendants(run.child.pid ?? -1);
    assert.ok(
      started.length >= 5,
      `control planes, controller and jobs are running (${started.length} processes)`,
    );
    run.child.kill('SIGINT');
    const code = await finished(run, 60_000);
    const out = run.output();
    assert.equal(code, 130, `exit code after SIGINT:\n${out}`);
    assert.match(out, /walkthrough: SIGINT: stopping everything…\nwalkthrough: stopped\./);
    const until = Date.now() + 5_000;
    let left = started.filter(alive);
    while (left.length > 0 && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 100));
      left = started.filter(alive);
    }
    assert.deepEqual(left, [], 'no process the walkthrough started is left');
    const dir = workDir(out);
    assert.ok(dir && !fs.existsSync(dir), `the work directory ${dir ?? '(not printed)'} is removed`);
  });
});
