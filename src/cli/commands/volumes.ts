// volumes orphaned: host volumes that belong to no existing VM, grouped by guest cluster;
// with --delete, deleted after a confirmation, each one re-checked right before its
// delete (a volume that became used meanwhile is skipped) and deleted only as the object
// that was listed (uid precondition).
import type { Command } from 'commander';
import { HarvesterApi } from '../../harvester-access/harvester-api.js';
import { isCredentialRejected, isForbidden } from '../../kube/errors.js';
import { redact } from '../../log/redact.js';
import { confirm } from '../confirm.js';
import type { CliContext, OutputFormat } from '../context.js';
import { ExitWithCode, UsageError } from '../errors.js';
import { parseDuration } from '../format/durations.js';
import { chooseKubeconfig } from '../kubeconfig-source.js';
import { scanCluster } from '../volumes/cluster-scan.js';
import { orphanReportJson, renderOrphanReport } from '../volumes/orphan-view.js';
import {
  classify,
  classifyContext,
  findOrphans,
  volumesToDelete,
  type OrphanVolume,
} from '../../harvester/orphaned-volumes.js';
import { outputOption } from './machine-info.js';
import { keyText } from '../../api/object-key.js';

interface OrphanedOptions {
  namespace?: string;
  kubeconfig?: string;
  context?: string;
  delete?: boolean;
  yes?: boolean;
  includeUnknown?: boolean;
  minAge: string;
  output: OutputFormat;
}

export interface DeletionOutcome {
  deleted: string[];
  skipped: Array<{ volume: string; reason: string }>;
  failed: Array<{ volume: string; error: string }>;
}

/** Is it still an orphan, and still the same object? undefined when it may go, else why not. */
async function recheck(
  harvester: HarvesterApi,
  volume: OrphanVolume,
  opts: { minAgeMs: number; includeUnknown: boolean },
): Promise<string | undefined> {
  const fresh = await scanCluster(harvester, volume.namespace);
  const pvc = fresh.pvcs.find((p) => p.metadata.name === volume.name);
  if (!pvc) return 'already gone';
  if (volume.uid && pvc.metadata.uid !== volume.uid) return 'replaced by a new volume of the same name';
  const now = classify(pvc, classifyContext(fresh, new Date(), opts.minAgeMs));
  if (now.kind === 'skip') return now.reason;
  if (now.kind === 'not-considered') return 'no longer looks like a VM or guest-cluster volume';
  if (now.volume.cluster === undefined && !opts.includeUnknown) return 'its guest cluster is no longer known';
  return undefined;
}

export async function deleteOrphans(
  ctx: CliContext,
  harvester: HarvesterApi,
  targets: OrphanVolume[],
  opts: { minAgeMs: number; includeUnknown: boolean },
): Promise<DeletionOutcome> {
  const outcome: DeletionOutcome = { deleted: [], skipped: [], failed: [] };
  for (const volume of targets) {
    const ref = keyText(volume.namespace, volume.name);
    try {
      const reason = await recheck(harvester, volume, opts);
      if (reason) {
        outcome.skipped.push({ volume: ref, reason });
        ctx.note(`skipped ${ref}: ${reason}`);
        continue;
      }
      await harvester.deletePvc(volume.namespace, volume.name, volume.uid);
      outcome.deleted.push(ref);
      ctx.note(`deleted ${ref}`);
    } catch (err) {
      if (isCredentialRejected(err)) throw err;
      const error = redact((err as Error).message);
      outcome.failed.push({ volume: ref, error });
      ctx.note(`failed ${ref}: ${error}`);
    }
  }
  return outcome;
}

async function orphaned(ctx: CliContext, opts: OrphanedOptions): Promise<void> {
  const minAgeMs = parseDuration(opts.minAge, '--min-age');
  if (opts.yes && !opts.delete) throw new UsageError('--yes only goes with --delete');
  const { content, trust } = chooseKubeconfig(opts.kubeconfig, ctx.env, undefined, opts.context);
  const harvester = HarvesterApi.fromKubeconfig(content, undefined, { trust });
  try {
    const scan = await scanCluster(harvester, opts.namespace).catch((err: unknown) => {
      if (isForbidden(err) && opts.namespace === undefined) {
        throw new UsageError(
          `${err.message}\nThe credential cannot list every namespace: pass --namespace <ns>.`,
        );
      }
      throw err;
    });
    const report = findOrphans(scan, { now: new Date(), minAgeMs });
    const includeUnknown = Boolean(opts.includeUnknown);
    if (!opts.delete) {
      if (opts.output === 'json') ctx.json(orphanReportJson(report));
      else for (const line of renderOrphanReport(report, { minAge: opts.minAge })) ctx.out(line);
      return;
    }
    if (opts.output === 'text')
      for (const line of renderOrphanReport(report, { minAge: opts.minAge })) ctx.out(line);
    const targets = volumesToDelete(report, includeUnknown);
    let outcome: DeletionOutcome = { deleted: [], skipped: [], failed: [] };
    if (targets.length === 0) ctx.note('Nothing to delete.');
    else if (!(await confirm(ctx, `Delete ${targets.length} volume(s) and the data on them?`, opts.yes))) {
      ctx.note('Nothing deleted.');
      throw new ExitWithCode(1);
    } else outcome = await deleteOrphans(ctx, harvester, targets, { minAgeMs, includeUnknown });
    if (opts.output === 'json') ctx.json({ ...(orphanReportJson(report) as object), deletion: outcome });
    else
      ctx.out(
        `Deleted ${outcome.deleted.length}, skipped ${outcome.skipped.length}, failed ${outcome.failed.length}.`,
      );
    if (outcome.failed.length > 0) throw new ExitWithCode(1);
  } finally {
    harvester.close();
  }
}

export function registerVolumes(program: Command, ctx: CliContext): void {
  const volumes = program.command('volumes').description('host volumes (PVCs) on Harvester');
  volumes
    .command('orphaned')
    .description(
      'list host volumes that no VM uses and whose guest cluster has no VM left (leaked by deleted clusters), grouped by guest cluster (the volumes part of `leftovers`)',
    )
    .option('-n, --namespace <namespace>', 'look in this namespace only (default: every namespace)')
    .option(
      '--kubeconfig <file>',
      'Harvester kubeconfig (default: HARVESTER_KUBECONFIG_CONTENT, $KUBECONFIG, ~/.kube/config)',
    )
    .option('--context <name>', 'with a kubeconfig: use this context instead of its current-context')
    .option('--min-age <duration>', 'leave out volumes younger than this (0, 90s, 10m, 2h, 7d)', '10m')
    .option('--delete', 'delete the listed volumes, after a confirmation')
    .option('-y, --yes', 'with --delete: do not ask for confirmation')
    .option('--include-unknown', 'with --delete: also delete volumes whose guest cluster is unknown')
    .addOption(outputOption())
    .action((opts: OrphanedOptions) => orphaned(ctx, opts));
}
