// The read commands about stored machines: ls, inspect, status, ip. Each has --output json.
// status, ip and ls ask Harvester (with the saved credential unless a fresh one is given).
import { Option, type Command } from 'commander';
import { CredentialRejectedError } from '../../harvester-access/credential-error.js';
import { MachineState } from '../../driver/machine-driver.js';
import type { KubeClientOptions } from '../../kube/client.js';
import { redact } from '../../log/redact.js';
import type { CliContext, OutputFormat } from '../context.js';
import { addFreshCredentialFlag } from '../driver-flags.js';
import { MachineNotFoundError } from '../errors.js';
import { renderTable } from '../format/table.js';
import { openMachine, vmRefOf, type FreshCredentialOptions } from '../machines.js';
import { describeFixedAddress, redactedHost, summarize, type MachineSummary } from '../machine-view.js';

interface ReadOptions extends FreshCredentialOptions {
  output: OutputFormat;
}

export function outputOption(): Option {
  return new Option('-o, --output <format>', 'output format').choices(['text', 'json']).default('text');
}

/** Options every command about one stored machine takes: a fresh credential. */
export function addMachineCredentialOptions(command: Command): Command {
  command.option('--kubeconfig <file>', "use this kubeconfig instead of the machine's saved one");
  command.option('--context <name>', 'with a kubeconfig: use this context instead of its current-context');
  return addFreshCredentialFlag(command);
}

/** ls asks every machine at once: short deadlines, one retry, so one dead Harvester cannot stall it. */
const LS_CLIENT: KubeClientOptions = {
  requestTimeoutMs: 10_000,
  retry: { attempts: 2, baseDelayMs: 250, maxDelayMs: 1_000 },
};
const LS_PARALLELISM = 8;

interface LsEntry extends MachineSummary {
  state: string;
  error: string | null;
  credentialRejected: boolean;
}

async function stateOf(ctx: CliContext, name: string): Promise<LsEntry> {
  const opened = await openMachine(ctx, name, { clientOptions: LS_CLIENT }).catch(
    (err: unknown) => err as Error,
  );
  if (opened instanceof Error) {
    const unreadable = {
      name,
      namespace: '',
      vm: '',
      clusterName: '',
      ip: '',
      ipv6: '',
      addressSource: '' as const,
      fixedAddress: null,
    };
    const error = redact(opened.message);
    return { ...unreadable, credential: { error }, state: 'Error', error, credentialRejected: false };
  }
  const { machine, driver } = opened;
  const summary = summarize(machine.host);
  try {
    const state = await driver.getState();
    return { ...summary, state: MachineState[state], error: null, credentialRejected: false };
  } catch (err) {
    const rejected = err instanceof CredentialRejectedError;
    const error = rejected
      ? `credential rejected: ${err.credential.identity ?? 'the saved credential'}; renew it (harvester-machine doctor tells how)`
      : redact((err as Error).message);
    return { ...summary, state: 'Error', error, credentialRejected: rejected };
  } finally {
    driver.close();
  }
}

async function ls(ctx: CliContext, opts: { output: OutputFormat }): Promise<void> {
  const names = await ctx.store.list();
  const entries: LsEntry[] = new Array<LsEntry>(names.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < names.length; i = next++) entries[i] = await stateOf(ctx, names[i] ?? '');
  };
  await Promise.all(Array.from({ length: Math.min(LS_PARALLELISM, names.length) }, worker));
  if (opts.output === 'json') return ctx.json(entries);
  if (entries.length === 0) return ctx.note(`No machines in ${ctx.store.root}`);
  const rows = entries.map((e) => [
    e.name,
    e.state,
    e.vm,
    e.clusterName || '-',
    e.ip || '-',
    e.addressSource || '-',
    e.error ?? '',
  ]);
  for (const line of renderTable(['name', 'state', 'vm', 'cluster', 'ip', 'ip from', 'errors'], rows))
    ctx.out(line);
}

async function inspect(ctx: CliContext, name: string, opts: { output: OutputFormat }): Promise<void> {
  const machine = await ctx.store.load(name);
  const summary = summarize(machine.host);
  if (opts.output === 'json') {
    return ctx.json({ ...summary, dir: machine.dir, config: redactedHost(machine.host) });
  }
  const credential =
    'error' in summary.credential
      ? summary.credential.error
      : `${summary.credential.identity} at ${summary.credential.server}` +
        (summary.credential.expiresAt ? `, expires ${summary.credential.expiresAt}` : '');
  const d = machine.host.Driver;
  const lines: Array<[string, unknown]> = [
    ['Name', summary.name],
    ['VM', summary.vm],
    ['Guest cluster', summary.clusterName || '-'],
    ['IP', summary.ip ? `${summary.ip} (from ${summary.addressSource})` : '-'],
    ['IPv6', summary.ipv6 || '-'],
    ['Fixed address', summary.fixedAddress ? describeFixedAddress(summary.fixedAddress) : '-'],
    ['CPU', d['CPU']],
    ['Memory', d['MemorySize']],
    ['Image', d['ImageName'] || '-'],
    ['Network', d['NetworkName'] || '-'],
    ['Credential', credential],
    ['Store', machine.dir],
  ];
  for (const [key, value] of lines) ctx.out(`${`${key}:`.padEnd(15)}${String(value)}`);
}

async function status(ctx: CliContext, name: string, opts: ReadOptions): Promise<void> {
  const { driver } = await openMachine(ctx, name, { fresh: opts });
  try {
    const state = MachineState[await driver.getState()];
    if (opts.output === 'json') ctx.json({ name, vm: vmRefOf(driver), state });
    else ctx.out(state);
    if (state === 'NotFound') {
      throw new MachineNotFoundError(
        `VM ${vmRefOf(driver)} of machine ${name} no longer exists on Harvester`,
      );
    }
  } finally {
    driver.close();
  }
}

async function ip(ctx: CliContext, name: string, opts: ReadOptions): Promise<void> {
  const { driver } = await openMachine(ctx, name, { fresh: opts });
  try {
    if ((await driver.getState()) === MachineState.NotFound) {
      throw new MachineNotFoundError(
        `VM ${vmRefOf(driver)} of machine ${name} no longer exists on Harvester`,
      );
    }
    const ipv4 = await driver.getIP();
    const ipv6 = await driver.getIPv6().catch(() => null);
    if (opts.output === 'json') ctx.json({ name, vm: vmRefOf(driver), ip: ipv4, ipv6 });
    else ctx.out(ipv4);
  } finally {
    driver.close();
  }
}

export function registerMachineInfo(program: Command, ctx: CliContext): void {
  program
    .command('ls')
    .description('list the stored machines with their state on Harvester')
    .addOption(outputOption())
    .action((opts: { output: OutputFormat }) => ls(ctx, opts));
  program
    .command('inspect')
    .description("show a machine's saved configuration (secrets redacted)")
    .argument('<name>')
    .addOption(outputOption())
    .action((name: string, opts: { output: OutputFormat }) => inspect(ctx, name, opts));
  addMachineCredentialOptions(
    program
      .command('status')
      .description("print a machine's state (Running, Stopped, ...; exit code 4 when its VM is gone)")
      .argument('<name>')
      .addOption(outputOption()),
  ).action((name: string, opts: ReadOptions) => status(ctx, name, opts));
  addMachineCredentialOptions(
    program
      .command('ip')
      .description("print a machine's IP address")
      .argument('<name>')
      .addOption(outputOption()),
  ).action((name: string, opts: ReadOptions) => ip(ctx, name, opts));
}
