// leftovers: what deleted guest clusters left on Harvester: host volumes no VM uses
// (`volumes orphaned`, harvester#7765), the load balancers their cloud provider made,
// which hold IP pool addresses (harvester#1460, #5522; docs/upstream/load-balancers.md), and
// the address claims no VM's address matches,
// and, with --rancher-kubeconfig, the VMs of guest clusters Rancher no longer has (harvester#7940).
// Nothing of a guest cluster that still has a VM is ever listed. Dry run by default; with
// --delete, after one confirmation, each item is re-checked right before its delete and
// deleted only as the object that was listed.
import type { Command } from 'commander';
import { findOrphans, volumesToDelete } from '../../harvester/orphaned-volumes.js';
import { findLeftoverLoadBalancers, loadBalancersToDelete } from '../../harvester/load-balancers.js';
import { HarvesterApi } from '../../harvester-access/harvester-api.js';
import { KubeClient } from '../../kube/client.js';
import { isForbidden } from '../../kube/errors.js';
import { confirm } from '../confirm.js';
import type { CliContext, OutputFormat } from '../context.js';
import { ExitWithCode, UsageError } from '../errors.js';
import { parseDuration } from '../format/durations.js';
import { chooseKubeconfig, readKubeconfigFile } from '../kubeconfig-source.js';
import {
  deleteOrphanedVms,
  renderVmReport,
  scanOrphanedVms,
  vmReportJson,
  type VmDeletionOutcome,
} from '../leftovers/orphaned-vms.js';
import { lbReportJson, renderLbReport } from '../leftovers/load-balancer-view.js';
import {
  deleteLeftoverLoadBalancers,
  scanLoadBalancers,
  type LbDeletionOutcome,
} from '../leftovers/load-balancers.js';
import {
  claimReportJson,
  deleteLeftoverClaims,
  renderClaimReport,
  scanAddressClaims,
  type ClaimDeletionOutcome,
} from '../leftovers/address-claims.js';
import { scanCluster } from '../volumes/cluster-scan.js';
import { orphanReportJson, renderOrphanReport } from '../volumes/orphan-view.js';
import { outputOption } from './machine-info.js';
import { deleteOrphans, type DeletionOutcome } from './volumes.js';

interface LeftoversOptions {
  namespace?: string;
  kubeconfig?: string;
  rancherKubeconfig?: string;
  delete?: boolean;
  yes?: boolean;
  includeUnknown?: boolean;
  minAge: string;
  output: OutputFormat;
}

async function leftovers(ctx: CliContext, opts: LeftoversOptions): Promise<void> {
  const minAgeMs = parseDuration(opts.minAge, '--min-age');
  if (opts.yes && !opts.delete) throw new UsageError('--yes only goes with --delete');
  const { content, trust } = chooseKubeconfig(opts.kubeconfig, ctx.env);
  const harvester = HarvesterApi.fromKubeconfig(content, undefined, { trust });
  const rancher = opts.rancherKubeconfig
    ? KubeClient.fromKubeconfig(readKubeconfigFile(opts.rancherKubeconfig, '--rancher-kubeconfig'), {
        trust: 'operator',
      })
    : undefined;
  try {
    const scan = await scanCluster(harvester, opts.namespace).catch((err: unknown) => {
      if (isForbidden(err) && opts.namespace === undefined)
        throw new UsageError(
          `${err.message}\nThe credential cannot list every namespace: pass --namespace <ns>.`,
        );
      throw err;
    });
    const lbScan = await scanLoadBalancers(harvester, opts.namespace, scan.vms);
    const now = new Date();
    const volumes = findOrphans(scan, { now, minAgeMs });
    const lbs = lbScan.loadBalancers
      ? findLeftoverLoadBalancers(lbScan.loadBalancers, lbScan.vms, { now, minAgeMs })
      : undefined;
    const claimScan = await scanAddressClaims(harvester, opts.namespace, scan.vms, minAgeMs);
    const vmScan = await scanOrphanedVms(rancher, scan.vms, minAgeMs, opts.namespace);
    const includeUnknown = Boolean(opts.includeUnknown);
    const report = (): Record<string, unknown> => ({
      volumes: orphanReportJson(volumes),
      loadBalancers: {
        ...(lbReportJson(lbs, lbScan.notListed) as Record<string, unknown>),
        ...(lbScan.unreadable ? { vmsUnreadableIn: lbScan.unreadable } : {}),
      },
      addressClaims: claimReportJson(claimScan),
      virtualMachines: vmReportJson(vmScan),
    });
    const text = (): void => {
      for (const line of renderOrphanReport(volumes, { minAge: opts.minAge })) ctx.out(line);
      ctx.out();
      for (const line of renderLbReport(lbs, {
        minAge: opts.minAge,
        ...(lbScan.notListed ? { notListed: lbScan.notListed } : {}),
        ...(lbScan.unreadable ? { unreadable: lbScan.unreadable } : {}),
      }))
        ctx.out(line);
      ctx.out();
      for (const line of renderClaimReport(claimScan)) ctx.out(line);
      ctx.out();
      for (const line of renderVmReport(vmScan)) ctx.out(line);
    };
    if (!opts.delete) {
      if (opts.output === 'json') ctx.json(report());
      else text();
      return;
    }
    if (opts.output === 'text') text();
    const volumeTargets = volumesToDelete(volumes, includeUnknown);
    const lbTargets = lbs ? loadBalancersToDelete(lbs, includeUnknown) : [];
    const claimTargets = claimScan.claims ?? [];
    const vmTargets = 'scan' in vmScan ? vmScan.scan.orphans : [];
    let volumeOutcome: DeletionOutcome = { deleted: [], skipped: [], failed: [] };
    let lbOutcome: LbDeletionOutcome = { deleted: [], skipped: [], failed: [] };
    let claimOutcome: ClaimDeletionOutcome = { deleted: [], failed: [] };
    let vmOutcome: VmDeletionOutcome = { deleted: [], skipped: [], failed: [] };
    if (volumeTargets.length + lbTargets.length + claimTargets.length + vmTargets.length === 0)
      ctx.note('Nothing to delete.');
    else if (
      !(await confirm(
        ctx,
        `Delete ${volumeTargets.length} volume(s) and the data on them, ${lbTargets.length} load balancer(s) and the addresses they hold, ${claimTargets.length} address claim(s) and ${vmTargets.length} orphaned VM(s)?`,
        opts.yes,
      ))
    ) {
      ctx.note('Nothing deleted.');
      throw new ExitWithCode(1);
    } else {
      volumeOutcome = await deleteOrphans(ctx, harvester, volumeTargets, { minAgeMs, includeUnknown });
      lbOutcome = await deleteLeftoverLoadBalancers(ctx, harvester, lbTargets, {
        minAgeMs,
        includeUnknown,
        namespace: opts.namespace,
      });
      claimOutcome = await deleteLeftoverClaims(harvester, claimTargets);
      // The VMs last: their volumes are then orphaned volumes, listed (not deleted) by the next run.
      if (rancher && vmTargets.length)
        vmOutcome = await deleteOrphanedVms(harvester, rancher, vmTargets, minAgeMs);
    }
    if (opts.output === 'json')
      ctx.json({
        ...report(),
        deletion: {
          volumes: volumeOutcome,
          loadBalancers: lbOutcome,
          addressClaims: claimOutcome,
          virtualMachines: vmOutcome,
        },
      });
    else
      ctx.out(
        `Volumes: deleted ${volumeOutcome.deleted.length}, skipped ${volumeOutcome.skipped.length}, failed ${volumeOutcome.failed.length}. ` +
          `Load balancers: deleted ${lbOutcome.deleted.length}, skipped ${lbOutcome.skipped.length}, failed ${lbOutcome.failed.length}. ` +
          `Address claims: deleted ${claimOutcome.deleted.length}, failed ${claimOutcome.failed.length}. ` +
          `Orphaned VMs: deleted ${vmOutcome.deleted.length}, skipped ${vmOutcome.skipped.length}, failed ${vmOutcome.failed.length}.`,
      );
    if (
      volumeOutcome.failed.length +
        lbOutcome.failed.length +
        claimOutcome.failed.length +
        vmOutcome.failed.length >
      0
    )
      throw new ExitWithCode(1);
  } finally {
    harvester.close();
    rancher?.close();
  }
}

export function registerLeftovers(program: Command, ctx: CliContext): void {
  program
    .command('leftovers')
    .description(
      'list what deleted guest clusters left on Harvester: volumes no VM uses, load balancers (with the IPs they hold) of guest clusters that have no VM left, grouped by guest cluster, fixed-address claims whose address no VM has (their VM is gone, or planted), and with --rancher-kubeconfig the VMs of guest clusters Rancher no longer has; --delete removes them',
    )
    .option(
      '-n, --namespace <namespace>',
      'look in this namespace only (default: every namespace); whether a guest cluster is gone is still judged by its VMs in every namespace the credential can read',
    )
    .option(
      '--kubeconfig <file>',
      'Harvester kubeconfig (default: HARVESTER_KUBECONFIG_CONTENT, $KUBECONFIG, ~/.kube/config)',
    )
    .option(
      '--rancher-kubeconfig <file>',
      "Rancher's local cluster: also list the VMs of guest clusters Rancher no longer has (read access to clusters and harvestermachines)",
    )
    .option('--min-age <duration>', 'leave out anything younger than this (0, 90s, 10m, 2h, 7d)', '10m')
    .option('--delete', 'delete what is listed, after a confirmation')
    .option('-y, --yes', 'with --delete: do not ask for confirmation')
    .option('--include-unknown', 'with --delete: also delete what belongs to no known guest cluster')
    .addOption(outputOption())
    .action((opts: LeftoversOptions) => leftovers(ctx, opts));
}
