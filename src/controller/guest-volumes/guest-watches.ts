import { KeyMap, formatKey, keyText, sameKey, type ObjectKey } from '../../api/object-key.js';
import { DEFAULT_GUEST_MAX_VOLUMES } from '../constants.js';
import type { PersistentVolume } from '../../api/core.js';
import {
  harvesterVolumes,
  HARVESTER_CSI_DRIVER,
  type GuestVolumeList,
} from '../../harvester/guest-volumes.js';
import {
  CacheBoundExceeded,
  MAX_CONTINUE_TOKEN,
  Informer,
  isCredentialRejected,
  isTooLarge,
  type KubeClient,
} from '../../kube/index.js';
import { KubeconfigError } from '../../kube/kubeconfig-content.js';
import { Resources, type KubeObject } from '../../kube/resources.js';
import type { Logger } from '../../log/logger.js';
import { redact } from '../../log/redact.js';
import { GUEST_KUBECONFIG_KEY, guestKubeconfigSecretName } from '../../rancher/names.js';
import type { SecretObject } from '../common/types.js';
import type { KubeconfigClients } from '../../harvester-access/clients.js';
import {
  MAX_NAME,
  MAX_NAMESPACE,
  MAX_TOKEN,
  optionalRecord,
  optionalText,
  record,
  shapeChecked,
  text,
} from '../common/object-shape.js';

export type GuestWatchState =
  /** Reading the Secret or listing for the first time. */
  | 'connecting'
  | 'watching'
  /** The guest's apiserver does not answer, or refuses: retried with backoff. */
  | 'unreachable'
  /**
   * Rancher has not written `<cluster>-kubeconfig` yet (it does once the guest's control plane
   * is up and names it in the cluster's status): nothing is sent, and nothing is wrong.
   */
  | 'waiting'
  /** No `<cluster>-kubeconfig` where one was looked for. */
  | 'no-kubeconfig'
  /** The Secret cannot be used: not a kubeconfig, or one naming a file, a command or a proxy. */
  | 'unusable'
  /**
   * The guest answered more than its budget (more PVs of the Harvester CSI driver than the
   * bound, a list that never ends, an answer or watch event over the cap): nothing of that
   * answer is kept, its ownership is not recorded, and it is listed again with backoff.
   */
  | 'over-budget';

export interface GuestWatchStatus {
  cluster: string;
  state: GuestWatchState;
  since: string;
  detail: string;
  /** Failed attempts since the last success (each retried with backoff). */
  failures?: number;
}

/**
 * What Rancher says of the cluster's `<cluster>-kubeconfig` Secret: `written` (the
 * provisioning Cluster's `status.clientSecretName` is set), `not-yet` (it is empty), or
 * `unknown` (no provisioning Cluster: a Cluster API cluster alone; its Secret is read on each
 * `ensure` until it is there).
 */
export type KubeconfigSignal = 'written' | 'not-yet' | 'unknown';

interface GuestWatch {
  key: ObjectKey;
  state: GuestWatchState;
  since: number;
  detail: string;
  failures: number;
  informer?: Informer<PersistentVolume>;
  client?: KubeClient;
  synced: boolean;
  timer?: NodeJS.Timeout;
  stopped: boolean;
  /** A connect is under way; `again`: an `ensure` came meanwhile (the Secret may be newer). */
  connecting: boolean;
  again: boolean;
  signal: KubeconfigSignal;
}

export interface GuestWatchesDeps {
  /** Rancher's local cluster: the Secrets are read here, by name only. */
  rancher: KubeClient;
  clients: KubeconfigClients;
  logger: Logger;
  /** A PV of the cluster changed (or its first list is in). */
  onChange: (cluster: ObjectKey) => void;
  /** The watch changed state (Events, status, metrics). */
  onState: (cluster: ObjectKey, state: GuestWatchState, detail: string) => void;
  /** Retries of a guest that cannot be reached: the first pause, and the longest. */
  backoff?: { initialMs: number; maxMs: number };
  /** The most PVs of the Harvester CSI driver kept per guest (default DEFAULT_GUEST_MAX_VOLUMES). */
  maxVolumes?: number;
  /** A guest's PV was dropped as malformed: why (a few words, a metric label). */
  onDropped?: (reason: string) => void;
  now?: () => number;
}

const DEFAULT_BACKOFF = { initialMs: 5_000, maxMs: 300_000 };

export { DEFAULT_GUEST_MAX_VOLUMES };
/** PVs per list page from a guest: a page of real PVs is well below the answer cap. */
export const GUEST_PAGE_SIZE = 100;
/**
 * The most one answer or watch event from a guest's apiserver may hold, unpacked: a page of
 * GUEST_PAGE_SIZE real PVs is a tenth of it, and several guests answering at once stay small
 * beside the controller's heap (the 64 MiB cap of Rancher's and Harvester's clients would not).
 */
export const GUEST_MAX_RESPONSE_BYTES = 4 * 1024 * 1024;

/**
 * What the watch keeps of a PV: enough to name its host volume and its claim, nothing more;
 * undefined for a PV of another driver (not kept at all). Shape-checked first: a field read
 * later that is of the wrong type or an absurd size throws Malformed naming it (the cache drops
 * the PV and counts it, shapeChecked), so no guest's odd PV can throw in anyone's path later.
 */
export function slimPersistentVolume(o: KubeObject): KubeObject | undefined {
  const pv = record(o, 'not-an-object');
  const meta = record(pv.metadata, 'metadata');
  const name = text(meta.name, 'metadata.name', MAX_NAME);
  const resourceVersion = optionalText(meta.resourceVersion, 'metadata.resourceVersion', MAX_TOKEN);
  const spec = record(pv.spec, 'spec');
  const csi = optionalRecord(spec.csi, 'spec.csi');
  if (!csi) return undefined;
  const driver = text(csi.driver, 'spec.csi.driver', MAX_NAME);
  if (driver !== HARVESTER_CSI_DRIVER) return undefined;
  const volumeHandle = text(csi.volumeHandle, 'spec.csi.volumeHandle', MAX_NAME);
  const ref = optionalRecord(spec.claimRef, 'spec.claimRef');
  const claimNamespace = ref && optionalText(ref.namespace, 'spec.claimRef.namespace', MAX_NAMESPACE);
  const claimName = ref && optionalText(ref.name, 'spec.claimRef.name', MAX_NAME);
  return {
    metadata: { name, ...(resourceVersion ? { resourceVersion } : {}) },
    spec: {
      csi: { driver: HARVESTER_CSI_DRIVER, volumeHandle },
      ...(ref ? { claimRef: { namespace: claimNamespace, name: claimName } } : {}),
    },
  } as PersistentVolume;
}

/** The guest's PVs as kept (slimPersistentVolume), the malformed ones dropped and counted. */
export function keptVolumes(
  items: readonly unknown[],
  onDropped: (reason: string) => void,
): PersistentVolume[] {
  const slim = shapeChecked(slimPersistentVolume, onDropped);
  const out: PersistentVolume[] = [];
  for (const item of items) {
    const kept = slim(item as KubeObject);
    if (kept) out.push(kept as PersistentVolume);
  }
  return out;
}

/**
 * The guest's PVs of the Harvester CSI driver read once (the last inventory), in pages of
 * GUEST_PAGE_SIZE through the watch's shape check, within the watch's bounds: more than `bound`
 * PVs, more pages than that fills (plus 10), or a continue token given twice or too long throws
 * CacheBoundExceeded.
 */
export async function listGuestVolumes(
  client: Pick<KubeClient, 'list'>,
  bound: number,
  onDropped: (reason: string) => void,
): Promise<PersistentVolume[]> {
  const maxPages = Math.ceil(bound / GUEST_PAGE_SIZE) + 10;
  const kept: PersistentVolume[] = [];
  const tokens = new Set<string>();
  let next: string | undefined;
  for (let pages = 1; ; pages++) {
    if (pages > maxPages)
      throw new CacheBoundExceeded(
        'PersistentVolume',
        bound,
        `the list goes on past ${maxPages} pages of ${GUEST_PAGE_SIZE} (a bound of ${bound} objects)`,
      );
    const page = await client.list<PersistentVolume>(Resources.persistentVolume, {
      limit: GUEST_PAGE_SIZE,
      ...(next ? { continue: next } : {}),
    });
    const items: unknown = page.items;
    kept.push(...keptVolumes(Array.isArray(items) ? (items as unknown[]) : [], onDropped));
    if (kept.length > bound)
      throw new CacheBoundExceeded('PersistentVolume', bound, `more than ${bound} objects listed`);
    const token: unknown = (page.metadata as { continue?: unknown } | undefined)?.continue;
    if (typeof token !== 'string' || token === '') return kept;
    if (token.length > MAX_CONTINUE_TOKEN || tokens.has(token))
      throw new CacheBoundExceeded(
        'PersistentVolume',
        bound,
        'the list gave the same continue token twice, or one too long (it would never end)',
      );
    tokens.add(token);
    next = token;
  }
}

/** What of a kept PV the record reads: a change elsewhere (its resourceVersion) is no news. */
const recordedPart = (pv: PersistentVolume | undefined): string =>
  pv
    ? `${pv.metadata.name}|${pv.spec.csi?.volumeHandle ?? ''}|${keyText(pv.spec.claimRef?.namespace, pv.spec.claimRef?.name)}`
    : '';

/** Over its budget: a bound of the cache, or an answer over the cap. */
export function isOverBudget(err: unknown): boolean {
  return err instanceof CacheBoundExceeded || isTooLarge(err);
}

/**
 * One watch of PersistentVolumes per guest cluster, in the guest's own apiserver, reached
 * through its `<cluster>-kubeconfig` Secret as Cluster API reaches it
 * (docs/upstream/cluster-api.md#the-guest-clusters-kubeconfig). The Secret's content is
 * someone else's input (whoever may edit Secrets in the cluster's namespace): inline
 * credentials only (KubeconfigClients), and the guest's answers are only ever
 * used as names (guest-volumes.ts).
 * Cost while idle: the watch itself, re-opened at each of the Informer's timeouts, a few
 * requests per guest cluster per hour, and nothing while nothing changes. No watch while
 * the guest cannot be reached: lists are retried with backoff (DEFAULT_BACKOFF), the
 * state reported (`unreachable`, with the error), and a rejected credential makes the Secret
 * be read again (Rancher rewrites it with a new token).
 * No request at all for a cluster whose Secret Rancher has not written: Rancher writes it in
 * the reconcile that sets the provisioning Cluster's `status.clientSecretName`
 * (docs/upstream/cluster-api.md#the-guest-clusters-kubeconfig), so until then the Secret is
 * not read, and that status change (an event of the cluster, which calls `ensure` again) is
 * what starts the watch. Only a Secret Rancher says it wrote and that is not there is polled
 * (with the backoff above): a fault, so the polls scale with faults, not with clusters.
 * Events and the status follow changes of state or of the error, not each retry.
 */
export class GuestWatches {
  private readonly watches = new KeyMap<GuestWatch>();

  constructor(private readonly deps: GuestWatchesDeps) {}

  private now(): number {
    return (this.deps.now ?? Date.now)();
  }

  get maxVolumes(): number {
    return this.deps.maxVolumes ?? DEFAULT_GUEST_MAX_VOLUMES;
  }

  /**
   * An error as a line for the status and Events. Over budget, the words stay the same from one
   * try to the next (no count, no token), so the Event is written once per change of state.
   */
  private describe(err: unknown): string {
    if (err instanceof CacheBoundExceeded)
      return `over its budget of ${this.maxVolumes} PersistentVolumes of the Harvester CSI driver: ${err.message.replace(/^[^:]*: /, '')}`;
    if (isTooLarge(err))
      return `over its budget: ${describe(err).replace(/^.*?: (response|watch event) larger/, '$1 larger')}`;
    return describe(err);
  }

  /**
   * Starts the cluster's watch unless it runs (idempotent); called on each event of the
   * cluster. While the Secret is missing it is read again here, not on a timer, unless
   * Rancher says it has not written it (then nothing is sent).
   */
  ensure(cluster: ObjectKey, signal: KubeconfigSignal = 'unknown'): void {
    const known = this.watches.get(cluster);
    if (known) {
      known.signal = signal;
      const missing = known.state === 'waiting' || known.state === 'no-kubeconfig';
      if (!missing || known.timer || signal === 'not-yet') return;
      if (known.connecting) known.again = true;
      else void this.connect(known);
      return;
    }
    const watch: GuestWatch = {
      key: cluster,
      state: 'connecting',
      since: this.now(),
      detail: '',
      failures: 0,
      synced: false,
      stopped: false,
      connecting: false,
      again: false,
      signal,
    };
    this.watches.set(cluster, watch);
    if (signal === 'not-yet') this.setState(watch, 'waiting', notWrittenYet(cluster));
    else void this.connect(watch);
  }

  has(cluster: ObjectKey): boolean {
    return this.watches.has(cluster);
  }

  /** The cluster's Harvester volumes as last watched; undefined before the first list. */
  volumes(cluster: ObjectKey): GuestVolumeList | undefined {
    const watch = this.watches.get(cluster);
    // Over budget: what is cached is not all the guest has; nothing is recorded from it.
    if (!watch?.synced || !watch.informer || watch.state === 'over-budget') return undefined;
    return harvesterVolumes(watch.informer.list());
  }

  /** A client for the guest (the watch's, else one made from the Secret now). */
  async client(cluster: ObjectKey): Promise<KubeClient> {
    const watch = this.watches.get(cluster);
    return watch?.client ?? this.makeClient(cluster);
  }

  /** Host volumes other guest clusters' PVs name, by volume, with who names them. */
  namedByOthers(except: ObjectKey): Map<string, string[]> {
    const out = new Map<string, string[]>();
    for (const [key, watch] of this.watches) {
      if (sameKey(key, except)) continue;
      for (const v of this.volumes(watch.key)?.volumes ?? [])
        out.set(v.hostPvc, [
          ...(out.get(v.hostPvc) ?? []),
          `PersistentVolume ${v.pv} of guest cluster ${formatKey(key)}`,
        ]);
    }
    return out;
  }

  status(): GuestWatchStatus[] {
    return [...this.watches.values()]
      .map((w) => ({
        cluster: formatKey(w.key),
        state: w.state,
        since: new Date(w.since).toISOString(),
        detail: w.detail,
        ...(w.failures > 0 ? { failures: w.failures } : {}),
      }))
      .sort((a, b) => a.cluster.localeCompare(b.cluster));
  }

  counts(): Map<GuestWatchState, number> {
    const counts = new Map<GuestWatchState, number>();
    for (const w of this.watches.values()) counts.set(w.state, (counts.get(w.state) ?? 0) + 1);
    return counts;
  }

  async stop(cluster: ObjectKey): Promise<void> {
    const watch = this.watches.get(cluster);
    if (!watch) return;
    this.watches.delete(cluster);
    watch.stopped = true;
    clearTimeout(watch.timer);
    await watch.informer?.stop();
    this.deps.clients.forget(formatKey(cluster));
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.watches.values()].map((w) => this.stop(w.key)));
  }

  /** Notifies (Events, status) when the state or the error changes, not on each retry. */
  private setState(watch: GuestWatch, state: GuestWatchState, detail: string): void {
    if (watch.stopped) return;
    const changed = watch.state !== state || watch.detail !== detail;
    if (watch.state !== state) watch.since = this.now();
    watch.state = state;
    watch.detail = detail;
    if (changed) this.deps.onState(watch.key, state, detail);
  }

  private async makeClient(cluster: ObjectKey): Promise<KubeClient> {
    const secret = await this.deps.rancher.find<SecretObject>(Resources.secret, {
      namespace: cluster.namespace,
      name: guestKubeconfigSecretName(cluster.name),
    });
    const raw = secret?.data?.[GUEST_KUBECONFIG_KEY];
    const client = secret
      ? this.deps.clients.forContent(
          formatKey(cluster),
          secret.metadata.resourceVersion ?? '',
          raw === undefined ? undefined : Buffer.from(raw, 'base64').toString('utf8'),
        )
      : undefined;
    if (!client) throw new NoKubeconfig(cluster, secret === undefined);
    return client;
  }

  /**
   * Reads the Secret, makes the client, lists; on a failure retries with backoff, except for
   * a Secret not there that Rancher has not said it wrote: the next `ensure` reads it again.
   */
  private async connect(watch: GuestWatch): Promise<void> {
    const backoff = this.deps.backoff ?? DEFAULT_BACKOFF;
    watch.timer = undefined;
    watch.connecting = true;
    watch.again = false;
    try {
      const client = await this.makeClient(watch.key);
      if (watch.stopped) return;
      watch.client = client;
      const informer = new Informer<PersistentVolume>(client, Resources.persistentVolume, {
        transform: shapeChecked(slimPersistentVolume, (reason) => this.deps.onDropped?.(reason)),
        maxObjects: this.maxVolumes,
        pageSize: GUEST_PAGE_SIZE,
        backoff: { initialMs: backoff.initialMs, maxMs: backoff.maxMs },
        logger: this.deps.logger.child({ guestCluster: formatKey(watch.key) }),
        onListed: () => {
          watch.failures = 0;
          this.setState(watch, 'watching', '');
        },
        onFailure: (err, pauseMs) => {
          watch.failures++;
          this.setState(watch, isOverBudget(err) ? 'over-budget' : 'unreachable', this.describe(err));
          // Rancher rewrites the Secret with a new token when the old one stops working.
          if (isCredentialRejected(err)) this.restart(watch, pauseMs);
        },
      });
      // Only news the record reads: a guest that rewrites its PVs forever costs no reconciles.
      informer.on(
        (e) =>
          watch.synced &&
          (e.type !== 'MODIFIED' || recordedPart(e.object) !== recordedPart(e.old)) &&
          this.deps.onChange(watch.key),
      );
      watch.informer = informer;
      await informer.start();
      watch.connecting = false;
      if (watch.stopped) return;
      watch.synced = true;
      this.deps.onChange(watch.key);
    } catch (err) {
      watch.connecting = false;
      if (watch.stopped) return;
      await watch.informer?.stop();
      watch.informer = undefined;
      watch.client = undefined;
      watch.synced = false;
      watch.failures++;
      const absent = err instanceof NoKubeconfig && err.absent;
      const state: GuestWatchState = absent
        ? 'no-kubeconfig'
        : err instanceof NoKubeconfig || err instanceof KubeconfigError
          ? 'unusable'
          : isOverBudget(err)
            ? 'over-budget'
            : 'unreachable';
      this.setState(watch, state, this.describe(err));
      if (absent && watch.signal !== 'written') {
        // Rancher has not said it wrote the Secret: its next event of the cluster brings us back.
        if (watch.again && watch.signal !== 'not-yet') void this.connect(watch);
        return;
      }
      const pause = Math.min(backoff.maxMs, backoff.initialMs * 2 ** Math.min(watch.failures - 1, 20));
      watch.timer = setTimeout(() => void this.connect(watch), pause);
    }
  }

  /** Drops the client and connects again after `pauseMs` (the Secret read anew). */
  private restart(watch: GuestWatch, pauseMs: number): void {
    if (watch.stopped || watch.timer) return;
    const informer = watch.informer;
    watch.informer = undefined;
    watch.client = undefined;
    watch.synced = false;
    this.deps.clients.forget(formatKey(watch.key));
    void informer?.stop();
    watch.timer = setTimeout(() => void this.connect(watch), pauseMs);
  }
}

function notWrittenYet(cluster: ObjectKey): string {
  return `Rancher has not written Secret ${keyText(cluster.namespace, guestKubeconfigSecretName(cluster.name))} yet (the provisioning Cluster's status.clientSecretName is empty); it is read once Rancher names it`;
}

class NoKubeconfig extends Error {
  constructor(
    cluster: ObjectKey,
    readonly absent: boolean,
  ) {
    super(
      absent
        ? `Secret ${keyText(cluster.namespace, guestKubeconfigSecretName(cluster.name))} does not exist (Rancher writes it once the guest cluster's apiserver is up)`
        : `Secret ${keyText(cluster.namespace, guestKubeconfigSecretName(cluster.name))} has no key ${GUEST_KUBECONFIG_KEY}`,
    );
  }
}

/** An error as a line for the status and Events: never the content (a KubeconfigError quotes none), redacted anyway. */
function describe(err: unknown): string {
  if (err instanceof KubeconfigError) return `its ${err.message}`;
  return redact(err instanceof Error ? (err.message.split('\n')[0] ?? '') : String(err));
}
