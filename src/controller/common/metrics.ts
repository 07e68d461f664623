// The controller's metrics, on prom-client: its own (harvester_machine_*, names kept from
// before), what controller-runtime users look for (reconcile counts and durations per
// controller, client-go's work-queue metrics, leader election), and the process's.
// Label values are queue names, fixed reasons, credential states and Secret names: never
// anything read from a credential.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { ReconcileOutcome, WorkQueueMetrics } from '../../kube/work-queue.js';

/** controller-runtime's reconcile-time buckets, trimmed: 5 ms … 60 s. */
const RECONCILE_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30, 60];
/** client-go's work-queue buckets: 10^-8 … 10^1 s, one per decade. */
const QUEUE_BUCKETS = [1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 10];

/** Replaces every series of a gauge at once (a gauge recomputed from a full view). */
export function replaceAll<L extends string>(
  gauge: Gauge<L>,
  series: Array<[Partial<Record<L, string>>, number]>,
): void {
  gauge.reset();
  for (const [labels, value] of series) gauge.set(labels, value);
}

/**
 * The controller's metrics, one object so that tests can read them. `processMetrics` adds
 * prom-client's default process and Node.js metrics (once per process: main.ts).
 */
export function controllerMetrics(options: { registry?: Registry; processMetrics?: boolean } = {}) {
  const registry = options.registry ?? new Registry();
  if (options.processMetrics) collectDefaultMetrics({ register: registry });
  const counter = <L extends string>(name: string, help: string, labelNames: readonly L[] = []) =>
    new Counter<L>({ name, help, labelNames, registers: [registry] });
  const gauge = <L extends string>(name: string, help: string, labelNames: readonly L[] = []) =>
    new Gauge<L>({ name, help, labelNames, registers: [registry] });
  const histogram = <L extends string>(
    name: string,
    help: string,
    labelNames: readonly L[],
    buckets: number[],
  ) => new Histogram<L>({ name, help, labelNames, buckets, registers: [registry] });
  return {
    registry,
    hooksAdded: counter(
      'harvester_machine_cleanup_hooks_added_total',
      'Pre-terminate hooks added to CAPI Machines.',
    ),
    gateReleases: counter(
      'harvester_machine_cleanup_gate_releases_total',
      'Gates released, by reason (annotated, vm-gone, single-machine, opted-out, deadline, ...).',
      ['reason'],
    ),
    vmAnnotations: counter(
      'harvester_machine_cleanup_vm_annotations_total',
      'VMs annotated removeAllPersistentVolumeClaims=true.',
    ),
    cleanupFailures: counter(
      'harvester_machine_cleanup_failures_total',
      'Failed cleanup attempts, by reason.',
      ['reason'],
    ),
    gatesHeld: gauge(
      'harvester_machine_cleanup_gates_held',
      'Machines being deleted whose gate is held by a failing cleanup.',
    ),
    credentials: gauge(
      'harvester_machine_credentials',
      'Harvester cloud credentials by state (valid, expiring-soon, expired, rejected, invalid, unknown).',
      ['state'],
    ),
    credentialExpiry: gauge(
      'harvester_machine_credential_expiry_timestamp_seconds',
      'Expiry of each Harvester cloud credential (by Secret namespace/name), when recorded.',
      ['secret'],
    ),
    credentialMismatches: gauge(
      'harvester_machine_credential_mismatches',
      'Pools or machines referencing an expired credential while their cluster has a valid one.',
    ),
    reconcileErrors: counter('harvester_machine_reconcile_errors_total', 'Reconcile errors, by queue.', [
      'queue',
    ]),
    apiRequests: counter(
      'harvester_machine_api_requests_total',
      "API requests sent, by API (rancher: Rancher's local cluster; harvester: through a cloud credential) and verb (get, list, watch, create, patch, update, delete).",
      ['api', 'verb'],
    ),
    leader: gauge('harvester_machine_controller_leader', '1 while this replica holds the Lease.'),
    droppedObjects: counter(
      'harvester_machine_objects_dropped_total',
      "Objects dropped where they enter a cache because a field read later has the wrong type or an absurd size, by source (guest: a guest cluster's apiserver; rancher: Rancher's local cluster), kind and the field (reason).",
      ['source', 'kind', 'reason'],
    ),
    // ---- what controller-runtime and client-go expose, under their names ----
    leaderElection: gauge(
      'leader_election_master_status',
      'Whether this replica is the leader (1) or not (0), by Lease name (client-go).',
      ['name'],
    ),
    reconcileTotal: counter(
      'controller_runtime_reconcile_total',
      'Reconciles per controller, by result (success, error, requeue_after).',
      ['controller', 'result'],
    ),
    reconcileErrorsTotal: counter(
      'controller_runtime_reconcile_errors_total',
      'Reconcile errors per controller.',
      ['controller'],
    ),
    reconcileTime: histogram(
      'controller_runtime_reconcile_time_seconds',
      'How long each reconcile took, per controller.',
      ['controller'],
      RECONCILE_BUCKETS,
    ),
    queueDepth: gauge('workqueue_depth', 'Keys waiting in the work queue.', ['name']),
    queueAdds: counter('workqueue_adds_total', 'Keys added to the work queue.', ['name']),
    queueRetries: counter('workqueue_retries_total', 'Keys queued again after a failed reconcile.', ['name']),
    queueDuration: histogram(
      'workqueue_queue_duration_seconds',
      'How long a key waited in the work queue before its reconcile started.',
      ['name'],
      QUEUE_BUCKETS,
    ),
    workDuration: histogram(
      'workqueue_work_duration_seconds',
      'How long processing a key took.',
      ['name'],
      QUEUE_BUCKETS,
    ),
  };
}

export type ControllerMetrics = ReturnType<typeof controllerMetrics>;

const VERBS: Record<string, string> = { POST: 'create', PUT: 'update', PATCH: 'patch', DELETE: 'delete' };

/** For KubeClientOptions.onRequest: counts each request by API and verb (a GET with a name is a get). */
export function countRequests(m: ControllerMetrics, api: 'rancher' | 'harvester') {
  return (method: string, path: string): void => {
    const verb =
      method === 'WATCH'
        ? 'watch'
        : method === 'GET'
          ? isCollection(path)
            ? 'list'
            : 'get'
          : (VERBS[method] ?? method.toLowerCase());
    m.apiRequests.inc({ api, verb });
  };
}

/** /api/v1/namespaces/n/secrets (a list) against /api/v1/namespaces/n/secrets/s (a get). */
function isCollection(path: string): boolean {
  const parts = (path.split('?')[0] ?? '').split('/').filter(Boolean);
  // [api, v1] or [apis, group, version], then [namespaces, ns]?, then resource [, name [, subresource]]
  let rest = parts[0] === 'api' ? parts.slice(2) : parts.slice(3);
  if (rest[0] === 'namespaces' && rest.length > 2) rest = rest.slice(2);
  return rest.length === 1;
}

/**
 * What one work queue reports, as client-go's workqueue metrics (label `name`) and
 * controller-runtime's reconcile metrics (label `controller`): one queue per controller here.
 */
export function workQueueMetrics(m: ControllerMetrics, name: string): WorkQueueMetrics {
  // Series exist from the start, at zero, as client-go's and controller-runtime's do.
  m.queueDepth.set({ name }, 0);
  m.queueAdds.inc({ name }, 0);
  m.queueRetries.inc({ name }, 0);
  m.reconcileErrorsTotal.inc({ controller: name }, 0);
  return {
    depth: (n) => m.queueDepth.set({ name }, n),
    added: () => m.queueAdds.inc({ name }),
    retried: () => m.queueRetries.inc({ name }),
    waited: (seconds) => m.queueDuration.observe({ name }, seconds),
    processed: (seconds: number, result: ReconcileOutcome) => {
      m.workDuration.observe({ name }, seconds);
      m.reconcileTime.observe({ controller: name }, seconds);
      m.reconcileTotal.inc({ controller: name, result });
      if (result === 'error') m.reconcileErrorsTotal.inc({ controller: name });
    },
  };
}
