import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WorkQueue } from '../../kube/work-queue.js';
import { controllerMetrics, countRequests, replaceAll, workQueueMetrics } from './metrics.js';

/** The value of one series in the text exposition, or undefined when it is absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('controller metrics', () => {
  it('keeps the existing names and renders the text exposition format', async () => {
    const m = controllerMetrics();
    m.cleanupFailures.inc({ reason: 'HarvesterCredentialInvalid' });
    m.cleanupFailures.inc({ reason: 'HarvesterCredentialInvalid' }, 2);
    m.gatesHeld.set({}, 1.5);
    const text = await m.registry.metrics();
    assert.match(text, /^# TYPE harvester_machine_cleanup_failures_total counter$/m);
    assert.equal(
      sample(text, 'harvester_machine_cleanup_failures_total{reason="HarvesterCredentialInvalid"}'),
      3,
    );
    assert.equal(sample(text, 'harvester_machine_cleanup_gates_held'), 1.5);
    assert.equal(sample(text, 'harvester_machine_controller_leader'), 0);
  });

  it('counts API requests by API and verb, a collection GET as a list', async () => {
    const m = controllerMetrics();
    const rancher = countRequests(m, 'rancher');
    rancher('GET', '/api/v1/namespaces/cattle-global-data/secrets?limit=500');
    rancher('GET', '/api/v1/namespaces/cattle-global-data/secrets/cc-1');
    rancher('GET', '/apis/cluster.x-k8s.io/v1beta1/machines');
    rancher('GET', '/apis/cluster.x-k8s.io/v1beta1/namespaces/fleet-default/machines/m-1');
    rancher('WATCH', '/apis/cluster.x-k8s.io/v1beta1/namespaces/fleet-default/machines');
    rancher('PATCH', '/apis/cluster.x-k8s.io/v1beta1/namespaces/fleet-default/machines/m-1');
    countRequests(m, 'harvester')('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews');
    const text = await m.registry.metrics();
    const count = (api: string, verb: string) =>
      sample(text, `harvester_machine_api_requests_total{api="${api}",verb="${verb}"}`);
    assert.equal(count('rancher', 'list'), 2);
    assert.equal(count('rancher', 'get'), 2);
    assert.equal(count('rancher', 'watch'), 1);
    assert.equal(count('rancher', 'patch'), 1);
    assert.equal(count('harvester', 'create'), 1);
  });

  it('replaces every series of a gauge at once', async () => {
    const m = controllerMetrics();
    m.credentials.set({ state: 'expired' }, 1);
    replaceAll(m.credentials, [[{ state: 'valid' }, 2]]);
    const text = await m.registry.metrics();
    assert.equal(sample(text, 'harvester_machine_credentials{state="expired"}'), undefined);
    assert.equal(sample(text, 'harvester_machine_credentials{state="valid"}'), 2);
  });

  it('counts what a work queue does as client-go and controller-runtime name it', async () => {
    const m = controllerMetrics();
    let calls = 0;
    let failed = 0;
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const queue = new WorkQueue(
      async (key) => {
        calls++;
        if (key === 'fails' && failed < 2) {
          failed++;
          throw new Error('boom');
        }
        if (key === 'slow') await gate;
        return key === 'later' ? { requeueAfterMs: 60_000 } : undefined;
      },
      { concurrency: 1, baseDelayMs: 1, maxDelayMs: 1, metrics: workQueueMetrics(m, 'machines') },
    );
    queue.add('slow');
    queue.add('a');
    queue.add('a'); // already waiting: not an add
    queue.add('later');
    let text = await m.registry.metrics();
    assert.equal(sample(text, 'workqueue_depth{name="machines"}'), 2, 'slow runs, a and later wait');
    assert.equal(sample(text, 'workqueue_adds_total{name="machines"}'), 3);
    release();
    await queue.idle();
    queue.add('fails');
    for (let i = 0; i < 100 && calls < 6; i++) await new Promise((r) => setTimeout(r, 10));
    await queue.idle();
    text = await m.registry.metrics();
    assert.equal(sample(text, 'workqueue_depth{name="machines"}'), 0);
    assert.equal(sample(text, 'workqueue_retries_total{name="machines"}'), 2);
    assert.equal(
      sample(text, 'controller_runtime_reconcile_total{controller="machines",result="success"}'),
      3,
    );
    assert.equal(
      sample(text, 'controller_runtime_reconcile_total{controller="machines",result="requeue_after"}'),
      1,
    );
    assert.equal(sample(text, 'controller_runtime_reconcile_total{controller="machines",result="error"}'), 2);
    assert.equal(sample(text, 'controller_runtime_reconcile_errors_total{controller="machines"}'), 2);
    assert.equal(sample(text, 'controller_runtime_reconcile_time_seconds_count{controller="machines"}'), 6);
    assert.equal(sample(text, 'workqueue_work_duration_seconds_count{name="machines"}'), 6);
    assert.equal(sample(text, 'workqueue_queue_duration_seconds_count{name="machines"}'), 6);
    await queue.stop();
  });

  it('adds the process metrics only when asked', async () => {
    assert.doesNotMatch(await controllerMetrics().registry.metrics(), /process_cpu_user_seconds_total/);
    const text = await controllerMetrics({ processMetrics: true }).registry.metrics();
    assert.match(text, /^process_cpu_user_seconds_total \d/m);
    assert.match(text, /^nodejs_heap_size_used_bytes \d/m);
  });
});
