// How `volumes orphaned` shows its findings: a table per guest cluster, the history that
// tells where a volume came from, and what was left out and why.
import { formatDuration } from '../../common/durations.js';
import { renderTable } from '../format/table.js';
import type { OrphanReport, OrphanVolume } from '../../harvester/orphaned-volumes.js';

function why(v: OrphanVolume): string {
  return v.clusterSource ? `${v.kind}; cluster from ${v.clusterSource}` : v.kind;
}

export function renderOrphanReport(report: OrphanReport, opts: { minAge: string }): string[] {
  const total = report.groups.reduce((n, g) => n + g.volumes.length, 0);
  const lines: string[] = [];
  if (total === 0)
    lines.push('No orphaned volumes: every VM or guest-cluster volume is in use or still has its cluster.');
  else
    lines.push(
      `${total} orphaned volume(s): no VM, VM instance or pod uses them, and no VM of their guest cluster is left.`,
    );
  for (const group of report.groups) {
    lines.push('', group.cluster === null ? 'Unknown cluster' : `Guest cluster "${group.cluster}"`);
    const rows = group.volumes.map((v) => [
      v.namespace,
      v.name,
      v.size,
      formatDuration(v.ageMs, 'column'),
      why(v),
    ]);
    lines.push(...renderTable(['namespace', 'name', 'size', 'age', 'why'], rows).map((l) => `  ${l}`));
    for (const v of group.volumes) for (const h of v.history) lines.push(`  ${v.name}: ${h}`);
  }
  const s = report.skipped;
  if (s.claimed.length) {
    lines.push(
      '',
      `Kept, ownership not certain (${s.claimed.length}): never deleted automatically, nor by --delete; delete by hand once you know whose it is`,
    );
    const rows = s.claimed.map((v) => [v.namespace, v.name, v.reason]);
    lines.push(...renderTable(['namespace', 'name', 'why'], rows).map((l) => `  ${l}`));
  }
  const live = s.liveCluster.length ? ` (clusters with VMs: ${report.liveClusters.join(', ')})` : '';
  lines.push(
    '',
    `Not listed: ${s.inUse.length} in use, ${s.liveCluster.length} of a guest cluster that still has VMs${live}, ` +
      `${s.tooNew.length} younger than ${opts.minAge}, ${s.deleting.length} being deleted, ${s.owned.length} owned by another object, ${s.claimed.length} of uncertain ownership (above); ` +
      `${report.notConsidered} other PVC(s) are not VM or guest-cluster volumes.`,
  );
  if (!report.podsChecked)
    lines.push(
      'Warning: pods could not be listed (no permission), so only VMs and VM instances were checked for use.',
    );
  if (report.groups.some((g) => g.cluster === null)) {
    lines.push(
      'Volumes of an unknown cluster may belong to a guest cluster that is still running with its workload stopped' +
        (report.liveClusters.length
          ? ` (guest clusters with VMs here: ${report.liveClusters.join(', ')})`
          : '') +
        '; --delete leaves them alone unless --include-unknown is given.',
    );
  }
  return lines;
}

/** The report as JSON: ages also as text, for people reading the JSON. */
export function orphanReportJson(report: OrphanReport): unknown {
  return {
    ...report,
    groups: report.groups.map((g) => ({
      ...g,
      volumes: g.volumes.map((v) => ({ ...v, age: formatDuration(v.ageMs, 'column') })),
    })),
  };
}
