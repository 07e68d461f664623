// The status summary the CLI (and `kubectl`) prints: a ConfigMap the leader rewrites when
// something changed, at most every few seconds.
//   kubectl -n <ns> get configmap harvester-machine-controller-status -o jsonpath='{.data.summary\.txt}'
// Keys: summary.json (schemaVersion 1: generatedAt, holder, credentials[], gatesHeld[],
// mismatches[], guestClusters[], lastInventories[]) and summary.txt (the same for people). No secret is ever in it: credentials
// are named by Secret, tokens by their public name only.
import { isNotFound, type KubeClient } from '../../kube/index.js';
import { Resources, type KubeObject } from '../../kube/resources.js';
import type { Logger } from '../../log/logger.js';
import type { CredentialRecord } from '../credentials/credential-monitor.js';
import type { MismatchReport } from '../credentials/credential-health.js';
import type { HeldGate } from '../gate/machine-reconciler.js';
import type { GuestWatchStatus } from '../guest-volumes/guest-watches.js';
import type { Inventory } from '../guest-volumes/volume-ownership.js';
import { keyText } from '../../api/object-key.js';

export interface StatusSummary {
  schemaVersion: 1;
  generatedAt: string;
  holder: string;
  credentials: Array<{
    secret: string;
    harvesterClusterId?: string;
    state: string;
    expiresAt?: string;
    detail: string;
    /** At most MAX_REFERRERS of them (a ConfigMap holds 1 MiB; a credential may serve thousands of machines). */
    referencedBy: string[];
    /** How many reference it in all, when more than referencedBy lists. */
    referencedByTotal?: number;
  }>;
  gatesHeld: HeldGate[];
  mismatches: Array<{ cluster: string; referrer: string; expired: string; valid: string; fix: string }>;
  /** Each guest cluster's PV watch (its host volumes recorded while it lives). */
  guestClusters: GuestWatchStatus[];
  /** The last inventory of each cluster whose whole deletion started: the volumes that go, and why. */
  lastInventories: Inventory[];
  /** Entries of each list left out so that the ConfigMap fits (absent when nothing was). */
  notShown?: Partial<Record<TrimmableList, number>>;
}

/** The summary's lists that may be cut to fit, most useful to keep last. */
const TRIMMABLE = ['guestClusters', 'lastInventories', 'mismatches', 'gatesHeld', 'credentials'] as const;
type TrimmableList = (typeof TRIMMABLE)[number];

/**
 * What the two keys of the ConfigMap may take together: a ConfigMap holds 1 MiB in all (its
 * keys and metadata included), and a summary of thousands of clusters is larger than that.
 */
export const MAX_SUMMARY_BYTES = 900 * 1024;

/** The ConfigMap's data for a summary, exactly as written. */
export function summaryData(s: StatusSummary): Record<'summary.json' | 'summary.txt', string> {
  return { 'summary.json': JSON.stringify(s, null, 2), 'summary.txt': renderSummaryText(s) };
}

function dataBytes(s: StatusSummary): number {
  const data = summaryData(s);
  return Buffer.byteLength(data['summary.json']) + Buffer.byteLength(data['summary.txt']);
}

/**
 * Cuts the summary's lists until it fits `maxBytes`: each round halves the list that takes the
 * most room, and counts what it left out (the text names it), so the ConfigMap is always written
 * and always says what it does not show.
 */
export function fitSummary(s: StatusSummary, maxBytes = MAX_SUMMARY_BYTES): StatusSummary {
  let fitted = s;
  while (dataBytes(fitted) > maxBytes) {
    const sizes = TRIMMABLE.map((list) => ({ list, bytes: JSON.stringify(fitted[list]).length }));
    const largest = sizes.reduce((a, b) => (b.bytes > a.bytes ? b : a));
    const entries: unknown[] = fitted[largest.list];
    if (entries.length === 0) break;
    const keep = Math.floor(entries.length / 2);
    const notShown = {
      ...fitted.notShown,
      [largest.list]: (fitted.notShown?.[largest.list] ?? 0) + entries.length - keep,
    };
    fitted = { ...fitted, [largest.list]: entries.slice(0, keep), notShown };
  }
  return fitted;
}

/** Referrers listed per credential in the summary; the rest are counted. */
export const MAX_REFERRERS = 20;

function referrers(all: string[]): { referencedBy: string[]; referencedByTotal?: number } {
  return all.length <= MAX_REFERRERS
    ? { referencedBy: all }
    : { referencedBy: all.slice(0, MAX_REFERRERS), referencedByTotal: all.length };
}

export function buildSummary(input: {
  now: Date;
  holder: string;
  credentials: Iterable<CredentialRecord>;
  referencedBy: (secret: string) => string[];
  held: Iterable<HeldGate>;
  mismatches: Iterable<MismatchReport>;
  guestWatches?: GuestWatchStatus[];
  inventories?: Inventory[];
}): StatusSummary {
  return fitSummary({
    schemaVersion: 1,
    generatedAt: input.now.toISOString(),
    holder: input.holder,
    credentials: [...input.credentials]
      .map((r) => ({
        secret: r.secret,
        ...(r.harvesterClusterId ? { harvesterClusterId: r.harvesterClusterId } : {}),
        state: r.health.state,
        ...(r.health.expiresAt ? { expiresAt: r.health.expiresAt.toISOString() } : {}),
        detail: r.health.detail,
        ...referrers(input.referencedBy(r.secret)),
      }))
      .sort((a, b) => a.secret.localeCompare(b.secret)),
    gatesHeld: [...input.held].sort((a, b) => a.machine.localeCompare(b.machine)),
    mismatches: [...input.mismatches].map((m) => ({
      cluster: keyText(m.cluster.namespace, m.cluster.name),
      referrer: m.referrer,
      expired: `${m.expired.namespace}:${m.expired.name}`,
      valid: `${m.valid.namespace}:${m.valid.name}`,
      fix: m.fix,
    })),
    guestClusters: input.guestWatches ?? [],
    lastInventories: input.inventories ?? [],
  });
}

export function renderSummaryText(s: StatusSummary): string {
  const lines = [
    `harvester-machine-controller status at ${s.generatedAt} (leader ${s.holder})`,
    '',
    'Cloud credentials:',
  ];
  if (!s.credentials.length) lines.push('  (none)');
  for (const c of s.credentials) {
    lines.push(
      `  ${c.state.toUpperCase().padEnd(13)} ${c.secret}${c.harvesterClusterId ? ` (Harvester ${c.harvesterClusterId})` : ''}: ${c.detail}`,
    );
    const more = (c.referencedByTotal ?? c.referencedBy.length) - c.referencedBy.length;
    if (c.referencedBy.length)
      lines.push(
        `                used by ${c.referencedBy.join(', ')}${more > 0 ? ` and ${more} more` : ''}`,
      );
  }
  lines.push('', 'Cleanup gates held:');
  if (!s.gatesHeld.length) lines.push('  (none)');
  for (const g of s.gatesHeld)
    lines.push(
      `  ${g.machine}: ${g.reason} since ${g.since}, released by ${g.releaseBy} at the latest`,
      `    ${g.message}`,
    );
  lines.push('', "Guest clusters' volumes (watched in each guest's apiserver):");
  if (!s.guestClusters.length) lines.push('  (none)');
  for (const g of s.guestClusters)
    lines.push(
      `  ${g.state.toUpperCase().padEnd(13)} ${g.cluster} since ${g.since}${g.detail ? `: ${g.detail}` : ''}${g.failures ? ` (${g.failures} attempts, retried with backoff)` : ''}`,
    );
  lines.push('', 'Deleted guest clusters, last inventory of their volumes:');
  if (!s.lastInventories.length) lines.push('  (none)');
  for (const i of s.lastInventories) {
    lines.push(`  ${i.cluster} at ${i.takenAt}, from ${i.source}: ${i.volumes.length} host volume(s)`);
    for (const v of i.volumes)
      lines.push(
        `    ${v.namespace ? `${v.namespace}/` : ''}${v.name}: guest PersistentVolume ${v.pv}${v.claim ? ` (claim ${v.claim})` : ''}; ${v.outcome}; ${goesWithCluster(v.outcome) ? 'goes with the cluster (unless a VM or pod still uses it)' : 'stays'}`,
      );
    for (const f of i.failures) lines.push(`    not recorded: ${f}`);
  }
  lines.push('', 'Expired credentials next to a valid one:');
  if (!s.mismatches.length) lines.push('  (none)');
  for (const m of s.mismatches)
    lines.push(
      `  ${m.referrer} uses ${m.expired}; cluster ${m.cluster} has valid ${m.valid}`,
      `    fix: ${m.fix}`,
    );
  const notShown = Object.entries(s.notShown ?? {}).filter(([, n]) => n > 0);
  if (notShown.length)
    lines.push(
      '',
      `Not shown (a ConfigMap holds 1 MiB): ${notShown.map(([list, n]) => `${n} more of ${list}`).join(', ')}`,
    );
  return lines.join('\n') + '\n';
}

/** Writes the ConfigMap when marked dirty, at most once per interval. */
export class StatusWriter {
  private dirty = false;
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(
    private readonly client: KubeClient,
    private readonly at: { namespace: string; name: string },
    private readonly build: () => StatusSummary,
    private readonly logger: Logger,
    private readonly intervalMs = 2_000,
  ) {}

  markDirty(): void {
    if (this.stopped) return;
    this.dirty = true;
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      this.writing = this.writing.then(() => this.flush());
    }, this.intervalMs);
  }

  async flush(): Promise<void> {
    if (!this.dirty) return;
    this.dirty = false;
    const data = summaryData(this.build());
    try {
      try {
        await this.client.patch(Resources.configMap, this.at, { data });
      } catch (err) {
        if (!isNotFound(err)) throw err;
        await this.client.create<KubeObject>(Resources.configMap, {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { ...this.at, labels: { 'app.kubernetes.io/name': 'harvester-machine-controller' } },
          data,
        } as KubeObject);
      }
    } catch (err) {
      this.dirty = true;
      this.logger.warn('cannot write the status ConfigMap', {
        error: err instanceof Error ? err.message : String(err),
      });
    }
  }

  /** Writes what is pending unless told not to (a replica that lost its leadership writes nothing more). */
  async stop(options: { flush?: boolean } = {}): Promise<void> {
    const flush = !this.stopped && options.flush !== false;
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.writing;
    if (flush) await this.flush();
  }
}

/** Recorded for the cluster (now or before): the whole-cluster removal and the volume cleanup take it. */
function goesWithCluster(outcome: string): boolean {
  return outcome.startsWith('labelled now') || outcome === 'recorded before';
}
