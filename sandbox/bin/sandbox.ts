// `sandbox up`: starts the whole sandbox with the real Cluster API manager on Rancher's local
// cluster, and Rancher's side of it (our cleanup controller, Rancher's stand-in with
// rancher-machine create and rm jobs), writes its four
// kubeconfigs (mode 0600) and state.json into the state directory, prints one
// `export …=<file>` line per kubeconfig on stdout (progress goes to stderr), and stays up
// until Ctrl-C, SIGTERM or `sandbox down`.
// `sandbox down`: signals the running `up` (its pid is in the state directory) and waits
// until it stopped everything and removed the state directory.
// `sandbox env`: the export lines of the running sandbox, for `eval "$(npm run --silent sandbox env)"`.
// The other commands (create-cluster, workload-volume, load-balancer, delete-cluster,
// job-logs, expire-token, renew-credential) play, against the running sandbox, what only
// the walkthrough played before; see sandbox/session/ and docs/sandbox-by-hand.md.
// State directory: --state-dir, else $HARVESTER_MACHINE_SANDBOX_DIR, else
// ~/.local/state/harvester-machine/sandbox.
import fs from 'node:fs';
import path from 'node:path';
import { Command, CommanderError, Option } from 'commander';
import { parseDuration } from '../../src/common/durations.js';
import { createLogger } from '../../src/log/logger.js';
import { redact } from '../../src/log/redact.js';
import { createTokenUser, tokenKubeconfig } from '../control-plane/access.js';
import { deferSignalsToOwner } from '../control-plane/processes.js';
import { startSandbox, type Sandbox } from '../sandbox.js';
import {
  CommandError,
  createCluster,
  deleteCluster,
  jobLogs,
  loadBalancer,
  workloadVolume,
} from '../session/cluster-commands.js';
import { expireToken, renewCredential } from '../session/credential-commands.js';
import { FLEET_NAMESPACE, startRancherSide, type RancherSide } from '../session/rancher-side.js';
import {
  KUBECONFIG_FILES,
  exportLines,
  openSession,
  readState,
  stateDirFrom,
  writePrivate,
  writeState,
  type KubeconfigVariable,
  type Session,
} from '../session/state.js';

const DAY = 86_400_000;

// Progress on stderr, so that stdout carries only the export lines.
const log = createLogger({ sink: { write: (_level, line) => process.stderr.write(`${line}\n`) } });

/** Running (an exited process its parent has not reaped yet, a zombie, is not). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true; // no /proc: trust kill(0)
  }
}

/** Processes whose command line names one of these (unique, temporary) directories. */
function processesUsing(dirs: string[]): number[] {
  if (dirs.length === 0 || !fs.existsSync('/proc')) return [];
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (dirs.some((d) => cmdline.includes(`${d}/`))) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function up(dir: string, opts: { rmRetryDelayMs: number }): Promise<number> {
  const previous = readState(dir);
  if (previous && alive(previous.pid)) {
    log.error(
      `sandbox: a sandbox is already running (pid ${previous.pid}, state in ${dir}); stop it with: npm run sandbox down`,
    );
    return 1;
  }
  fs.rmSync(dir, { recursive: true, force: true }); // a stale state from a killed run
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeState(dir, { pid: process.pid, status: 'starting' });

  let sandbox: Sandbox | undefined;
  let rancherSide: RancherSide | undefined;
  let stopping: Promise<void> | undefined;
  const stop = (signal: string): Promise<void> =>
    (stopping ??= (async () => {
      log.info(`sandbox: ${signal}: stopping`);
      // Interrupted processes are also killed by the control plane's own handler; never wait forever.
      await Promise.race([
        (async () => {
          await rancherSide?.stop();
          await sandbox?.stop();
        })(),
        sleep(30_000),
      ]);
      fs.rmSync(dir, { recursive: true, force: true });
      log.info('sandbox: stopped');
      process.exit(0);
    })());
  // The stop above is ours: the control plane's processes stay up for it. A second signal
  // (a second Ctrl-C) does not wait: the exit kills everything at once.
  deferSignalsToOwner();
  let signals = 0;
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const)
    process.on(signal, () => {
      if (++signals > 1) {
        log.warn(`sandbox: ${signal} again: killing everything now`);
        process.exit(1);
      }
      void stop(signal);
    });

  const t0 = Date.now();
  log.info(
    "sandbox: starting (two control planes, KubeVirt, the Cluster API manager, stand-in controllers, front proxy, Rancher's side)",
  );
  try {
    // Rancher's local cluster runs the real Cluster API manager, as in the walkthrough.
    sandbox = await startSandbox({ logger: log, clusterApi: { namespace: FLEET_NAMESPACE } });
    // What a Harvester operator has (the UI's "Download KubeConfig"): admin, through the same
    // endpoint as every other Harvester client (the front proxy).
    const operator = await createTokenUser(sandbox.harvester.admin, {
      expiresAt: new Date(Date.now() + 30 * DAY),
      clusterRole: 'cluster-admin',
    });
    const contents: Record<KubeconfigVariable, string> = {
      HARVESTER_KUBECONFIG: sandbox.kubeconfigs.harvesterDirect,
      HARVESTER_VIA_RANCHER_KUBECONFIG: sandbox.kubeconfigs.harvesterViaRancher,
      HARVESTER_ADMIN_KUBECONFIG: tokenKubeconfig({
        name: 'harvester-admin',
        server: sandbox.proxy.url,
        caPem: sandbox.proxy.caPem,
        token: operator.token,
      }),
      RANCHER_KUBECONFIG: sandbox.kubeconfigs.rancherLocal,
    };
    for (const [variable, file] of Object.entries(KUBECONFIG_FILES) as Array<[KubeconfigVariable, string]>)
      writePrivate(path.join(dir, file), contents[variable]);
    rancherSide = await startRancherSide(sandbox, { dir, retryDelayMs: opts.rmRetryDelayMs, logger: log });
    await rancherSide.controller.waitForLine((l) => l.msg === 'caches synced', 'caches synced', 60_000);
  } catch (err) {
    await rancherSide?.stop().catch(() => undefined);
    await sandbox?.stop().catch(() => undefined);
    fs.rmSync(dir, { recursive: true, force: true });
    log.error(`sandbox: failed to start: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  }
  if (stopping) return 0; // interrupted while starting: stop() runs and exits
  writeState(dir, {
    pid: process.pid,
    status: 'up',
    dirs: [sandbox.harvester.dir, sandbox.rancher.dir],
    proxyUrl: sandbox.proxy.url,
    proxyCaPem: sandbox.proxy.caPem,
    clusterId: sandbox.clusterId,
    clusterName: 'harvester',
    cloudCredential: sandbox.cloudCredential,
    seeds: {
      namespace: sandbox.seeds.namespace,
      image: sandbox.seeds.image,
      network: sandbox.seeds.network,
      keyPair: sandbox.seeds.keyPair,
    },
    fleetNamespace: FLEET_NAMESPACE,
  });
  process.stdout.write(exportLines(dir).join('\n') + '\n');
  log.info(
    `sandbox: up in ${((Date.now() - t0) / 1000).toFixed(1)} s: Harvester and Rancher's /k8s/clusters/${sandbox.clusterId} at ${sandbox.proxy.url}; ` +
      `Cluster API, the cleanup controller and Rancher's create and rm jobs in ${FLEET_NAMESPACE}; stop with Ctrl-C or: npm run sandbox down`,
  );
  await new Promise<never>(() => undefined); // until a signal
  return 0;
}

async function down(dir: string): Promise<number> {
  const state = readState(dir);
  if (!state) {
    log.info(`sandbox: no sandbox is running (no state in ${dir})`);
    return 0;
  }
  if (alive(state.pid)) {
    process.kill(state.pid, 'SIGTERM');
    const deadline = Date.now() + 60_000;
    while (alive(state.pid)) {
      if (Date.now() > deadline) {
        log.error(`sandbox: pid ${state.pid} did not stop within 60 s; killing it`);
        process.kill(state.pid, 'SIGKILL');
        break;
      }
      await sleep(100);
    }
  }
  // A killed `up` could not stop its control planes nor clean up after itself.
  for (const pid of processesUsing([...(state.dirs ?? []), dir])) process.kill(pid, 'SIGKILL');
  for (const leftover of state.dirs ?? []) fs.rmSync(leftover, { recursive: true, force: true });
  fs.rmSync(dir, { recursive: true, force: true });
  log.info('sandbox: stopped');
  return 0;
}

/** What every command prints: "<who>: <what it did>", redacted. */
const say = (who: string, line: string): void => void process.stdout.write(redact(`${who}: ${line}`) + '\n');

function durationOption(flag: string) {
  return (value: string): number => {
    try {
      return parseDuration(value, { bareNumbers: 'seconds' });
    } catch (err) {
      throw new CommandError(`${flag}: ${err instanceof Error ? err.message : String(err)}`);
    }
  };
}

/** Runs a command against the running sandbox's session, closed afterwards. */
type InSession = (fn: (s: Session) => Promise<void>) => Promise<void>;

/** What a guest cluster asks of the sandbox: create-cluster, workload-volume, load-balancer. */
function addGuestClusterCommands(cmd: Command, session: InSession): void {
  cmd
    .command('create-cluster <name>')
    .description(
      'Rancher provisions a guest cluster: Cluster API makes its Machines, a create job per machine runs rancher-machine with our plugin',
    )
    .option('--machines <n>', 'machines in the pool', (v) => Number.parseInt(v, 10), 1)
    .option('--pool <name>', 'machine pool name', 'pool1')
    .addOption(
      new Option('--timeout <duration>', 'how long to wait for every machine to be Running')
        .default(600_000, '10m')
        .argParser(durationOption('--timeout')),
    )
    .action((name: string, o: { machines: number; pool: string; timeout: number }) => {
      if (!Number.isInteger(o.machines) || o.machines < 1 || o.machines > 10)
        throw new CommandError('--machines: a number from 1 to 10');
      return session((s) =>
        createCluster(s, say, { name, machines: o.machines, pool: o.pool, timeoutMs: o.timeout }),
      );
    });
  cmd
    .command('workload-volume <cluster>')
    .description(
      "a workload's volume as the Harvester CSI driver makes it, hot-plugged into a VM of the cluster",
    )
    .option('--size <quantity>', 'size of the guest PVC', '2Gi')
    .option('--vm <name>', "VM to hot-plug it into (default: the cluster's first)")
    .option('--unattached', "a stopped workload's volume: labelled with the cluster, attached to no VM")
    .action((cluster: string, o: { size: string; vm?: string; unattached?: boolean }) =>
      session((s) =>
        workloadVolume(s, say, {
          cluster,
          size: o.size,
          ...(o.vm ? { vm: o.vm } : {}),
          unattached: Boolean(o.unattached),
        }),
      ),
    );
  cmd
    .command('load-balancer <cluster>')
    .description(
      "the guest cluster's cloud provider makes a Harvester load balancer for a Service of type LoadBalancer",
    )
    .option('--service <namespace/name>', "the guest cluster's Service", 'default/nginx')
    .addOption(
      new Option('--ipam <mode>', 'address from the sandbox IP pool or by DHCP')
        .choices(['pool', 'dhcp'])
        .default('pool'),
    )
    .action((cluster: string, o: { service: string; ipam: 'pool' | 'dhcp' }) =>
      session((s) => loadBalancer(s, say, { cluster, service: o.service, ipam: o.ipam })),
    );
}

/** What Rancher does for the sandbox's user: delete-cluster, job-logs, expire-token, renew-credential. */
function addRancherCommands(cmd: Command, session: InSession): void {
  cmd
    .command('delete-cluster <name>')
    .description(
      'delete the guest cluster in Rancher, as Cluster Management does, and wait until Rancher is done',
    )
    .addOption(
      new Option('--timeout <duration>', 'how long to wait')
        .default(300_000, '5m')
        .argParser(durationOption('--timeout')),
    )
    .action((name: string, o: { timeout: number }) =>
      session((s) => deleteCluster(s, say, { name, timeoutMs: o.timeout })),
    );
  cmd
    .command('job-logs <cluster>')
    .description("what Rancher's rm jobs of the cluster's machines printed")
    .addOption(
      new Option('--wait <outcome>', 'first wait for an rm job that ended so').choices([
        'failed',
        'succeeded',
      ]),
    )
    .addOption(
      new Option('--timeout <duration>', 'how long to wait')
        .default(180_000, '3m')
        .argParser(durationOption('--timeout')),
    )
    .action((cluster: string, o: { wait?: 'failed' | 'succeeded'; timeout: number }) =>
      session((s) =>
        jobLogs(s, say, (t) => void process.stdout.write(redact(t)), {
          cluster,
          timeoutMs: o.timeout,
          ...(o.wait ? { wait: o.wait } : {}),
        }),
      ),
    );
  cmd
    .command('expire-token [name]')
    .description("expire a Rancher token (default: the one in the sandbox's Harvester cloud credential)")
    .action((name: string | undefined) => session((s) => expireToken(s, say, name ? { token: name } : {})));
  cmd
    .command('renew-credential')
    .description(
      "renew the Harvester cloud credential as Rancher's UI does: a new token for the same user, saved into the same credential",
    )
    .action(() => session((s) => renewCredential(s, say, {})));
}

/** The command line; resolves with the exit code. */
async function main(argv: string[]): Promise<number> {
  let code = 0;
  const cmd = new Command('sandbox')
    .description('the harvester-machine sandbox: Harvester and Rancher stand-ins on real apiservers')
    .option(
      '--state-dir <dir>',
      'state directory (env HARVESTER_MACHINE_SANDBOX_DIR; default ~/.local/state/harvester-machine/sandbox)',
    )
    .exitOverride()
    .showHelpAfterError();
  const dir = (): string => {
    const given = cmd.opts<{ stateDir?: string }>().stateDir;
    return stateDirFrom(given ? ['--state-dir', given] : []);
  };
  const session: InSession = async (fn) => {
    const s = await openSession(dir(), 180_000);
    try {
      await fn(s);
    } finally {
      s.close();
    }
  };

  cmd
    .command('up')
    .description('start the sandbox; stays in the foreground')
    .addOption(
      new Option(
        '--rm-retry-delay <duration>',
        "pause between runs of a failed rm job (Rancher's Job retries it 3 times)",
      )
        .default(20_000, '20s')
        .argParser(durationOption('--rm-retry-delay')),
    )
    .action(async (o: { rmRetryDelay: number }) => {
      code = await up(dir(), { rmRetryDelayMs: o.rmRetryDelay });
    });
  cmd
    .command('down')
    .description('stop the running sandbox')
    .action(async () => {
      code = await down(dir());
    });
  cmd
    .command('env')
    .description('print the export lines of the running sandbox (waits while it starts)')
    .action(async () => {
      (await openSession(dir(), 180_000)).close();
      process.stdout.write(exportLines(dir()).join('\n') + '\n');
    });
  addGuestClusterCommands(cmd, session);
  addRancherCommands(cmd, session);

  try {
    await cmd.parseAsync(argv, { from: 'user' });
    return code;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`sandbox: ${redact(message)}\n`);
    return 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
