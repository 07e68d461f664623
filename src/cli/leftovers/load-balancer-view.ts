// How `leftovers` shows load balancers: a table per guest cluster, then what was left out.
import { formatDuration } from '../../common/durations.js';
import { LB_LABEL_CLUSTER, type LeftoverLbReport } from '../../harvester/load-balancers.js';
import { renderTable } from '../format/table.js';

export function renderLbReport(
  report: LeftoverLbReport | undefined,
  opts: { minAge: string; notListed?: string; unreadable?: string[] },
): string[] {
  if (!report) return [`Load balancers not checked: ${opts.notListed ?? 'not listed'}.`];
  const total = report.groups.reduce((n, g) => n + g.loadBalancers.length, 0);
  const lines = [
    total === 0
      ? 'No leftover load balancers: every guest-cluster load balancer still has VMs of its cluster.'
      : `${total} leftover load balancer(s): made by the cloud provider of a guest cluster that has no VM left.`,
  ];
  for (const group of report.groups) {
    lines.push(
      '',
      group.cluster === null
        ? `Load balancers of no known cluster (${LB_LABEL_CLUSTER} empty or "kubernetes": the cloud provider ran without --cluster-name)`
        : `Guest cluster "${group.cluster}": load balancers`,
    );
    const rows = group.loadBalancers.map((lb) => [
      lb.namespace,
      lb.name,
      lb.service ?? '',
      lb.address ?? '',
      formatDuration(lb.ageMs, 'column'),
    ]);
    lines.push(...renderTable(['namespace', 'name', 'service', 'address', 'age'], rows).map((l) => `  ${l}`));
  }
  const s = report.skipped;
  lines.push(
    '',
    `Load balancers not listed: ${s.liveCluster.length} of a guest cluster that still has VMs, ${s.tooNew.length} younger than ${opts.minAge}, ${s.deleting.length} being deleted; ${report.notConsidered} VM load balancer(s) are not guest-cluster ones.`,
  );
  if (opts.unreadable?.length)
    lines.push(
      `VMs could not be read in ${opts.unreadable.join(', ')}: a guest cluster whose VMs are only there may be listed although it is still there.`,
    );
  if (report.groups.some((g) => g.cluster === null))
    lines.push('--delete leaves load balancers of no known cluster alone unless --include-unknown is given.');
  return lines;
}

/** The report as JSON: ages also as text. */
export function lbReportJson(report: LeftoverLbReport | undefined, notListed?: string): unknown {
  if (!report) return { checked: false, reason: notListed };
  return {
    checked: true,
    ...report,
    groups: report.groups.map((g) => ({
      ...g,
      loadBalancers: g.loadBalancers.map((lb) => ({ ...lb, age: formatDuration(lb.ageMs, 'column') })),
    })),
  };
}
