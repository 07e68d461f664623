// A few counters and gauges in the Prometheus text exposition format (version 0.0.4).
// Small on purpose: no dependency for what fits in one screen.

type Labels = Record<string, string>;

const escapeLabel = (v: string): string =>
  v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
const labelKey = (labels: Labels): string =>
  Object.keys(labels)
    .sort()
    .map((k) => `${k}="${escapeLabel(labels[k] ?? '')}"`)
    .join(',');

class Metric {
  readonly values = new Map<string, number>();
  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: 'counter' | 'gauge',
  ) {}

  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} ${this.type}`];
    for (const [key, value] of this.values) lines.push(`${this.name}${key ? `{${key}}` : ''} ${value}`);
    return lines.join('\n');
  }
}

export class Counter extends Metric {
  inc(labels: Labels = {}, by = 1): void {
    const key = labelKey(labels);
    this.values.set(key, (this.values.get(key) ?? 0) + by);
  }
  get(labels: Labels = {}): number {
    return this.values.get(labelKey(labels)) ?? 0;
  }
}

export class Gauge extends Metric {
  set(labels: Labels, value: number): void {
    this.values.set(labelKey(labels), value);
  }
  get(labels: Labels = {}): number | undefined {
    return this.values.get(labelKey(labels));
  }
  /** Replaces every series at once (a gauge recomputed from a full view). */
  replaceAll(series: Array<[Labels, number]>): void {
    this.values.clear();
    for (const [labels, value] of series) this.set(labels, value);
  }
}

export class Registry {
  private readonly metrics: Metric[] = [];
  counter(name: string, help: string): Counter {
    const m = new Counter(name, help, 'counter');
    this.metrics.push(m);
    return m;
  }
  gauge(name: string, help: string): Gauge {
    const m = new Gauge(name, help, 'gauge');
    this.metrics.push(m);
    return m;
  }
  render(): string {
    return this.metrics.map((m) => m.render()).join('\n') + '\n';
  }
}

/** The controller's metrics, one object so that tests can read them. */
export function controllerMetrics(registry = new Registry()) {
  return {
    registry,
    hooksAdded: registry.counter(
      'harvester_machine_cleanup_hooks_added_total',
      'Pre-terminate hooks added to CAPI Machines.',
    ),
    gateReleases: registry.counter(
      'harvester_machine_cleanup_gate_releases_total',
      'Gates released, by reason (annotated, vm-gone, single-machine, opted-out, deadline, ...).',
    ),
    vmAnnotations: registry.counter(
      'harvester_machine_cleanup_vm_annotations_total',
      'VMs annotated removeAllPersistentVolumeClaims=true.',
    ),
    cleanupFailures: registry.counter(
      'harvester_machine_cleanup_failures_total',
      'Failed cleanup attempts, by reason.',
    ),
    gatesHeld: registry.gauge(
      'harvester_machine_cleanup_gates_held',
      'Machines being deleted whose gate is held by a failing cleanup.',
    ),
    credentials: registry.gauge(
      'harvester_machine_credentials',
      'Harvester cloud credentials by state (valid, expiring-soon, expired, rejected, unknown).',
    ),
    credentialExpiry: registry.gauge(
      'harvester_machine_credential_expiry_timestamp_seconds',
      'Expiry of each Harvester cloud credential, when recorded.',
    ),
    credentialMismatches: registry.gauge(
      'harvester_machine_credential_mismatches',
      'Pools or machines referencing an expired credential while their cluster has a valid one.',
    ),
    reconcileErrors: registry.counter(
      'harvester_machine_reconcile_errors_total',
      'Reconcile errors, by queue.',
    ),
    leader: registry.gauge('harvester_machine_controller_leader', '1 while this replica holds the Lease.'),
  };
}

export type ControllerMetrics = ReturnType<typeof controllerMetrics>;
