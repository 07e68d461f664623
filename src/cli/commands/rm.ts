// rm <name>: the driver's Remove (idempotent: a VM already gone is success), then the
// store entry. --dry-run (or `plan rm <name>`) shows the driver's removal plan instead,
// the same pure plan the real removal records on the VM; --whole-cluster previews it as
// if Rancher had marked the VM for a whole-cluster deletion, naming also the guest
// cluster's load balancers that go with the cluster.
import type { Command } from 'commander';
import type { CliContext, OutputFormat } from '../context.js';
import { confirm } from '../confirm.js';
import { ExitWithCode, UsageError } from '../errors.js';
import { openMachine, vmRefOf, type FreshCredentialOptions } from '../machines.js';
import { loadBalancerPreview, removalPreview, renderRemovalPreview } from '../removal-preview.js';
import { addMachineCredentialOptions, outputOption } from './machine-info.js';

interface RmOptions extends FreshCredentialOptions {
  yes?: boolean;
  dryRun?: boolean;
  wholeCluster?: boolean;
  output: OutputFormat;
}

async function previewRemoval(ctx: CliContext, name: string, opts: RmOptions): Promise<void> {
  const { machine, driver } = await openMachine(ctx, name, { fresh: opts });
  try {
    const plan = await driver.planRemoval({ wholeCluster: Boolean(opts.wholeCluster) });
    // A machine outside a guest cluster has no cloud provider, so no load balancers.
    const loadBalancers =
      plan && driver.config.ClusterName
        ? loadBalancerPreview({
            view: await driver.clusterLoadBalancers(),
            cluster: driver.config.ClusterName,
            namespace: plan.namespace,
            vmName: plan.vmName,
            wholeCluster: plan.removeAll,
          })
        : undefined;
    const preview = removalPreview({
      machine: name,
      namespace: driver.config.VMNamespace,
      vmName: driver.config.MachineName,
      plan,
      wholeClusterAssumed: Boolean(opts.wholeCluster),
      ...(loadBalancers ? { loadBalancers } : {}),
    });
    if (opts.output === 'json') ctx.json(preview);
    else for (const line of renderRemovalPreview(preview, machine.dir)) ctx.out(line);
  } finally {
    driver.close();
  }
}

async function remove(ctx: CliContext, name: string, opts: RmOptions): Promise<void> {
  if (opts.wholeCluster) {
    throw new UsageError(
      '--whole-cluster only previews (with --dry-run): a whole-cluster removal is decided by Rancher, which marks every VM of the cluster',
    );
  }
  const progress = ctx.progress();
  const { machine, driver } = await openMachine(ctx, name, { fresh: opts, progress });
  try {
    const vm = vmRefOf(driver);
    if (!(await confirm(ctx, `Remove machine ${name} (VM ${vm} and its volumes)?`, opts.yes))) {
      ctx.note('Nothing removed.');
      throw new ExitWithCode(1);
    }
    progress.phase(`removing VM ${vm}`);
    await driver.remove();
    await ctx.store.remove(name);
    progress.stop();
    if (opts.output === 'json') ctx.json({ name, vm, removed: true, store: machine.dir });
    else ctx.out(`Machine ${name} removed (VM ${vm})`);
  } finally {
    progress.stop();
    driver.close();
  }
}

function addRmOptions(command: Command): Command {
  return addMachineCredentialOptions(
    command
      .argument('<name>')
      .option(
        '--whole-cluster',
        "preview as if Rancher had marked the VM for a whole-cluster deletion (every volume of the machine's guest cluster goes)",
      )
      .addOption(outputOption()),
  );
}

export function registerRm(program: Command, ctx: CliContext): void {
  addRmOptions(
    program
      .command('rm')
      .description(
        "remove a machine: its VM and volumes on Harvester (as the driver's Remove), then the store entry",
      )
      .option('-y, --yes', 'do not ask for confirmation')
      .option('--dry-run', 'show what would be deleted and kept, and why, without changing anything'),
  ).action((name: string, opts: RmOptions) =>
    opts.dryRun ? previewRemoval(ctx, name, opts) : remove(ctx, name, opts),
  );

  const plan = program.command('plan').description('show what a command would do, without doing it');
  addRmOptions(plan.command('rm').description('the same as rm --dry-run')).action(
    (name: string, opts: RmOptions) => previewRemoval(ctx, name, opts),
  );
}
