// The faults of the chaos run: which fire in a run, in which phase of the story and how far
// into it, all drawn from one seeded generator (the same seed gives the same plan), and how
// each is done for real against the world: an apiserver restarted, watches cut every second,
// a 429 storm with Retry-After, a proxy that passes nothing for 20 s, the cluster's credential
// expired in the middle of the deletion and renewed later, the leading controller killed.
import { expireRancherToken } from '../../sandbox/rancher/tokens.js';
import type { SandboxRancherToken } from '../../sandbox/sandbox.js';
import type { ChaosWorld } from './world.js';

/** mulberry32: small, fast, and enough to make a plan reproducible from a 32-bit seed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

export const PHASES = ['create', 'scale-down', 'delete'] as const;
export type Phase = (typeof PHASES)[number];

export const FAULT_KINDS = [
  'apiserver-restart',
  'watch-cuts',
  '429-storm',
  'proxy-stall',
  'credential-expiry',
  'controller-failover',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export const STALL_MS = 20_000;
const WATCH_CUT_WINDOW_MS = 10_000;
const STORM_MS = 5_000;

export interface PlannedFault {
  kind: FaultKind;
  phase: Phase;
  /** After the phase begins. */
  offsetMs: number;
  /** apiserver-restart: which; proxy-stall: which side. */
  target: 'harvester' | 'rancher';
  /** credential-expiry: renewed this long after it expired. */
  renewAfterMs: number;
  retryAfterSeconds: number;
}

export interface FiredFault {
  kind: FaultKind;
  phase: Phase;
  /** Since the run began. */
  atMs: number;
  durationMs: number;
  /** What it did, in a few words ("rancher apiserver down 2.9 s", "31 watches cut"). */
  effect: string;
  error?: string;
}

const pick = <T>(rng: () => number, items: readonly T[]): T => items[Math.floor(rng() * items.length)] as T;

/** Two to four different faults per run, each at a point of the story. */
export function planFaults(rng: () => number): PlannedFault[] {
  const kinds = [...FAULT_KINDS];
  for (let i = kinds.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [kinds[i], kinds[j]] = [kinds[j] as FaultKind, kinds[i] as FaultKind];
  }
  const count = 2 + Math.floor(rng() * 3);
  return kinds.slice(0, count).map((kind) => ({
    kind,
    // A credential that expires, and a leader that dies, in the middle of a deletion.
    phase:
      kind === 'credential-expiry' || kind === 'controller-failover'
        ? pick(rng, ['scale-down', 'delete'] as const)
        : pick(rng, PHASES),
    // A credential expires within the first second of its phase, before the gates are decided.
    offsetMs: Math.floor(rng() * (kind === 'credential-expiry' ? 1_000 : 3_000)),
    target: pick(rng, ['harvester', 'rancher'] as const),
    renewAfterMs: 5_000 + Math.floor(rng() * 10_000),
    retryAfterSeconds: 1 + Math.floor(rng() * 2),
  }));
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const secs = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

/** Retries `fn` (an apiserver may be restarting meanwhile) for up to `forMs`. */
async function persist<T>(what: string, fn: () => Promise<T>, forMs = 90_000): Promise<T> {
  const deadline = Date.now() + forMs;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > deadline)
        throw new Error(`${what}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
      await sleep(1_000);
    }
  }
}

/** The run's credential, which credential-expiry expires and renews. */
export interface RunCredential {
  name: string;
  token: SandboxRancherToken;
}

export class FaultRun {
  readonly fired: FiredFault[] = [];
  private readonly running: Array<Promise<void>> = [];
  private readonly timers: NodeJS.Timeout[] = [];

  constructor(
    private readonly world: ChaosWorld,
    readonly plan: PlannedFault[],
    private readonly credential: RunCredential,
    private readonly t0: number,
  ) {}

  /** The story entered `phase`: its faults fire at their offsets from now. */
  enter(phase: Phase): void {
    for (const fault of this.plan.filter((f) => f.phase === phase)) {
      this.timers.push(
        setTimeout(() => {
          this.running.push(this.fire(fault));
        }, fault.offsetMs),
      );
    }
  }

  /** Waits until every fault that fired is over (a stall thawed, a credential renewed). */
  async settled(): Promise<void> {
    for (;;) {
      const n = this.running.length;
      await Promise.all(this.running);
      if (this.running.length === n) return;
    }
  }

  /** Faults of phases never reached, or timers not yet due, do not fire. */
  cancelPending(): void {
    for (const t of this.timers) clearTimeout(t);
  }

  private async fire(fault: PlannedFault): Promise<void> {
    const start = Date.now();
    const record: FiredFault = {
      kind: fault.kind,
      phase: fault.phase,
      atMs: start - this.t0,
      durationMs: 0,
      effect: '',
    };
    this.fired.push(record);
    try {
      record.effect = await this.act(fault);
    } catch (err) {
      record.error = err instanceof Error ? err.message : String(err);
    } finally {
      record.durationMs = Date.now() - start;
    }
  }

  private async act(fault: PlannedFault): Promise<string> {
    const { world } = this;
    switch (fault.kind) {
      case 'apiserver-restart': {
        const cp = fault.target === 'harvester' ? world.sandbox.harvester : world.sandbox.rancher;
        const start = Date.now();
        await cp.restartApiserver();
        return `${fault.target} kube-apiserver restarted, down ${secs(Date.now() - start)}`;
      }
      case 'watch-cuts': {
        let cut = 0;
        for (let elapsed = 0; elapsed < WATCH_CUT_WINDOW_MS; elapsed += 1_000) {
          cut += world.rancherSide.cutWatches() + world.harvesterSide.cutWatches();
          await sleep(1_000);
        }
        return `${cut} watches cut, every 1 s for ${secs(WATCH_CUT_WINDOW_MS)}`;
      }
      case '429-storm': {
        const before = world.rancherSide.stormAnswers + world.harvesterSide.stormAnswers;
        const until = Date.now() + STORM_MS;
        world.rancherSide.storm(until, fault.retryAfterSeconds);
        world.harvesterSide.storm(until, fault.retryAfterSeconds);
        await sleep(STORM_MS);
        const answered = world.rancherSide.stormAnswers + world.harvesterSide.stormAnswers - before;
        return `${answered} requests answered 429 (Retry-After: ${fault.retryAfterSeconds}) for ${secs(STORM_MS)}`;
      }
      case 'proxy-stall': {
        const side = fault.target === 'harvester' ? world.harvesterSide : world.rancherSide;
        side.freeze();
        await sleep(STALL_MS);
        side.thaw();
        return `${fault.target}-side proxy passed nothing for ${secs(STALL_MS)}`;
      }
      case 'credential-expiry': {
        const { credential } = this;
        const old = credential.token;
        await persist('expiring the token', () => expireRancherToken(world.rancher, old.name));
        await sleep(fault.renewAfterMs);
        const renewed = await persist('renewing the token', () =>
          world.sandbox.newRancherToken({ ttlMs: 86_400_000, userId: old.userId }),
        );
        await persist('saving the renewed credential', () => world.saveCredential(credential.name, renewed));
        credential.token = renewed;
        return `token ${old.name} expired, the credential ${credential.name} renewed ${secs(fault.renewAfterMs)} later`;
      }
      case 'controller-failover': {
        const leader = await persist('finding the leader', async () => {
          const found = await world.leader();
          if (!found) throw new Error('no replica holds the Lease');
          return found;
        });
        const identity = await world.leaseHolder();
        const killedAt = Date.now();
        await world.killReplica(leader, 3_000);
        const next = await persist(
          'a standby taking the Lease',
          async () => {
            const holder = await world.leaseHolder();
            if (!holder || holder === identity)
              throw new Error(`the Lease is still held by ${holder ?? 'nobody'}`);
            return holder;
          },
          120_000,
        );
        const successor = world.replicas.find((r) => next.endsWith(`-${r.process.pid ?? ''}`));
        return `leader ${leader.name} killed (SIGKILL); ${successor?.name ?? next} took the Lease ${secs(Date.now() - killedAt)} later`;
      }
    }
  }
}
