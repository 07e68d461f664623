// create <name>: rancher-machine's create, minus Docker provisioning. The flags are the
// plugin's (FLAG_TABLE), with their environment variables. Order: validate the flags,
// check Harvester (nothing created yet: a failure leaves no trace), save the machine,
// create the VM and wait for it, save again with its address. A create that fails after
// the VM was made keeps the store entry, so `rm` can clean up (or `create` be retried
// after `rm`).
import type { Command } from 'commander';
import { FLAGS } from '../../driver/config/flags.js';
import { HarvesterDriver } from '../../driver/harvester-driver.js';
import type { CliContext } from '../context.js';
import { addDriverFlags, collectFlagValues, givenFlag } from '../driver-flags.js';
import { UsageError } from '../errors.js';
import {
  checkCredentialContent,
  chooseKubeconfig,
  overrideContext,
  readKubeconfigFile,
} from '../kubeconfig-source.js';
import { checkMachineName } from '../store/host-config.js';
import { keyText } from '../../api/object-key.js';

interface CreateOptions extends Record<string, unknown> {
  kubeconfig?: string;
  context?: string;
}

/** The kubeconfig for a new machine: --harvester-kubeconfig-content, --kubeconfig, then the environment. */
function kubeconfigFor(ctx: CliContext, opts: CreateOptions, fromFlags: string): string {
  const inline = givenFlag(opts, FLAGS.kubeconfigContent);
  if (inline !== undefined && opts.kubeconfig) {
    throw new UsageError('give either --kubeconfig or --harvester-kubeconfig-content, not both');
  }
  if (inline !== undefined) {
    checkCredentialContent(fromFlags, '--harvester-kubeconfig-content');
    return overrideContext(fromFlags, opts.context, '--harvester-kubeconfig-content');
  }
  if (opts.kubeconfig) return readKubeconfigFile(opts.kubeconfig, '--kubeconfig', opts.context);
  if (fromFlags !== '') {
    checkCredentialContent(fromFlags, FLAGS.kubeconfigContent.envVar);
    return overrideContext(fromFlags, opts.context, FLAGS.kubeconfigContent.envVar);
  }
  return chooseKubeconfig(undefined, ctx.env, undefined, opts.context).content;
}

async function create(ctx: CliContext, name: string, opts: CreateOptions): Promise<void> {
  checkMachineName(name);
  const values = collectFlagValues(opts, ctx.env);
  values.set(
    FLAGS.kubeconfigContent.name,
    kubeconfigFor(ctx, opts, String(values.get(FLAGS.kubeconfigContent.name) ?? '')),
  );
  const store = ctx.store;
  const progress = ctx.progress();
  const driver = new HarvesterDriver({
    // A new machine takes its credential from the flags only, checked above where it is a
    // credential's; what the CLI's operator gives it is theirs.
    argv: [],
    env: {},
    kubeconfigTrust: 'operator',
    logger: ctx.logger(progress),
    progress: (event) => progress.update(event),
  });
  let vmRequested = false;
  await store.create(name);
  try {
    driver.setConfigRaw(Buffer.from(JSON.stringify({ MachineName: name, StorePath: store.root })));
    driver.setConfigFromFlags(values);
    const vm = keyText(driver.config.VMNamespace, name);
    progress.phase(`checking Harvester before creating VM ${vm}`);
    await driver.preCreateCheck();
    await store.save(name, driver.getConfigRaw());
    progress.phase(`creating VM ${vm}`);
    vmRequested = true;
    await driver.create();
    await store.save(name, driver.getConfigRaw());
    progress.stop();
    ctx.out(`Machine ${name} created: VM ${vm}, IP ${driver.config.IPAddress || '(none)'}`);
  } catch (err) {
    progress.stop();
    if (!vmRequested) await store.remove(name);
    else {
      await store.save(name, driver.getConfigRaw()).catch(() => undefined);
      ctx.note(
        `The machine is kept in the store (${store.machineDir(name)}): ` +
          `"harvester-machine rm ${name}" removes whatever was created on Harvester.`,
      );
    }
    throw err;
  } finally {
    driver.close();
  }
}

export function registerCreate(program: Command, ctx: CliContext): void {
  const command = program
    .command('create')
    .description('create a machine: a Harvester VM with the same flags as the Rancher node driver')
    .argument('<name>', 'machine (and VM) name')
    .option(
      '--kubeconfig <file>',
      'read the Harvester kubeconfig from this file (default: --harvester-kubeconfig-content, then $KUBECONFIG)',
    )
    .option('--context <name>', 'with a kubeconfig: use this context instead of its current-context');
  addDriverFlags(command).action((name: string, opts: CreateOptions) => create(ctx, name, opts));
}
