// The chart's RBAC as real helm renders it from the packaged chart: exactly the rules of
// rbac/rules.yaml, bound only where needed; applied server-side to Rancher's apiserver, they
// suffice for the controller run with a TokenRequest token of the chart's ServiceAccount,
// and with one rule removed the same run is denied.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { parse, stringify } from 'yaml';
import { parseConfig } from '../../src/controller/process/config.js';
import { run, type Running } from '../../src/controller/process-main.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { createLogger } from '../../src/log/logger.js';
import { tokenKubeconfig } from '../../sandbox/control-plane/access.js';
import { serviceAccountToken } from '../../sandbox/control-plane/service-account-token.js';
import {
  harvesterMachineExecutable,
  unpackCacheEnv,
} from '../../sandbox/rancher-machine/plugin-executable.js';
import { releaseArtifacts } from '../../sandbox/release/artifacts.js';
import { applyServerSide, helm, renderChart } from '../../sandbox/release/helm.js';
import { useControlPlane } from '../support/control-plane-fixture.js';
import { eventually } from '../support/eventually.js';
import { CHART_DIR, chartRules, renderChartRbac, type ChartRules } from './chart-rbac.js';

const exec = promisify(execFile);

interface Rbac {
  kind?: string;
  metadata: { name?: string; namespace?: string };
  rules?: unknown;
  roleRef?: { kind: string; name: string };
  subjects?: Array<{ kind: string; name: string; namespace?: string }>;
}

describe('Helm chart RBAC', { timeout: 10 * 60_000 }, () => {
  const fixture = useControlPlane({ name: 'rancher', crds: 'rancher' });
  const rules = chartRules();
  let chart = '';
  let docs: Rbac[] = [];
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-chart-rbac-'));
  const running: Running[] = [];
  /** What run() asked the process to exit with (its exit hook, in place of process.exit). */
  const exits = new Map<string, number[]>();
  after(async () => {
    for (const r of running) await r.shutdown();
    fs.rmSync(tmp, { recursive: true, force: true });
  });
  before(async () => {
    chart = (await releaseArtifacts()).chart;
    docs = await renderChartRbac(chart, { release: 'hmc', namespace: 'cattle-system' });
  });
  const find = (kind: string, namespace?: string): Rbac | undefined =>
    docs.find((d) => d.kind === kind && d.metadata.namespace === namespace);

  it('renders the ClusterRole and both Roles with exactly the rules of rbac/rules.yaml', () => {
    assert.deepEqual(find('ClusterRole')?.rules, rules.clusterRules);
    assert.deepEqual(find('Role', 'cattle-global-data')?.rules, rules.credentialRules);
    assert.deepEqual(find('Role', 'cattle-system')?.rules, rules.systemRules);
  });

  it('binds them to the chart ServiceAccount only where they are needed', async () => {
    const bindings = docs.filter((d) => d.kind === 'RoleBinding');
    assert.deepEqual(bindings.map((b) => [b.metadata.namespace, b.roleRef?.kind, b.roleRef?.name]).sort(), [
      ['cattle-global-data', 'Role', 'hmc-credentials'],
      ['cattle-system', 'Role', 'hmc-system'],
      ['fleet-default', 'ClusterRole', 'hmc'],
    ]);
    for (const b of bindings)
      assert.deepEqual(b.subjects, [{ kind: 'ServiceAccount', name: 'hmc', namespace: 'cattle-system' }]);
    assert.equal(find('ClusterRoleBinding'), undefined, 'no cluster-wide binding when namespaces are listed');
    const all = (await renderChartRbac(chart, {
      release: 'hmc',
      namespace: 'cattle-system',
      values: { watchNamespaces: [] },
    })) as Rbac[];
    assert.deepEqual(
      all.filter((d) => d.kind === 'ClusterRoleBinding').map((b) => b.roleRef?.name),
      ['hmc'],
      'watchNamespaces: [] binds the ClusterRole cluster-wide',
    );
  });

  it('grants no write on Secrets, and outside the credential namespace reads a Secret only by name', () => {
    assert.ok(!rules.systemRules.some((r) => r.resources.includes('secrets')));
    // The guest clusters' <cluster>-kubeconfig, read by name: never listed or watched.
    assert.deepEqual(
      rules.clusterRules.filter((r) => r.resources.includes('secrets')).map((r) => r.verbs),
      [['get']],
    );
    assert.deepEqual(rules.credentialRules.find((r) => r.resources.includes('secrets'))?.verbs, [
      'list',
      'watch',
    ]);
    assert.ok(!JSON.stringify(rules).includes('"*"'), 'no wildcard');
  });

  it('names its Lease and status ConfigMap: get, update and patch only by name, create (unnameable) alone', () => {
    const named = (resource: string, verb: string): string[][] =>
      rules.systemRules
        .filter((r) => r.resources.includes(resource) && r.verbs.includes(verb))
        .map((r) => r.resourceNames ?? []);
    assert.deepEqual(named('leases', 'get'), [['harvester-machine-controller']]);
    assert.deepEqual(named('leases', 'update'), [['harvester-machine-controller']]);
    assert.deepEqual(named('configmaps', 'patch'), [['harvester-machine-controller-status']]);
    assert.deepEqual(named('leases', 'create'), [[]]);
    assert.deepEqual(named('configmaps', 'create'), [[]]);
  });

  /**
   * Installs the rendered chart (all of it, server-side) as `release` in its own namespace;
   * the kubeconfig of a TokenRequest token of the chart's ServiceAccount, as its pod would
   * authenticate, and the namespaces.
   */
  async function install(
    chartRef: string,
    release: string,
  ): Promise<{ kubeconfigPath: string; ns: string; watched: string }> {
    const { cp } = fixture;
    const ns = `${release}-system`;
    const watched = `${release}-fleet`;
    for (const name of [ns, watched, 'cattle-global-data'])
      await cp.admin
        .create(Resources.namespace, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } })
        .catch(() => undefined);
    const objects = await renderChart(chartRef, {
      release,
      namespace: ns,
      values: { watchNamespaces: [watched] },
    });
    const applied = await applyServerSide(cp.admin, objects);
    assert.equal(applied.length, objects.length);
    const token = await serviceAccountToken(cp.admin, { namespace: ns, name: release });
    const kubeconfigPath = path.join(tmp, `${release}.kubeconfig`);
    fs.writeFileSync(
      kubeconfigPath,
      tokenKubeconfig({ name: 'rancher', server: cp.server, caPem: cp.caPem, token }),
      { mode: 0o600 },
    );
    return { kubeconfigPath, ns, watched };
  }

  /** install(), then the controller in process. */
  async function installAndRun(
    chartRef: string,
    release: string,
  ): Promise<{ controller: Running; logLines: string[] }> {
    const { kubeconfigPath, ns, watched } = await install(chartRef, release);
    const logLines: string[] = [];
    const logger = createLogger({
      format: 'json',
      level: 'debug',
      sink: { write: (_l, line) => logLines.push(line) },
    });
    const config = parseConfig(['--kubeconfig', kubeconfigPath, '--metrics-bind-address', '127.0.0.1:0'], {
      WATCH_NAMESPACES: watched,
      POD_NAMESPACE: ns,
      POD_NAME: `${release}-0`,
    });
    exits.set(release, []);
    const controller = await run(config, logger, {}, { exit: (code) => exits.get(release)?.push(code) });
    running.push(controller);
    return { controller, logLines };
  }

  let reducedChart: Promise<string> | undefined;
  /** The chart, unpacked, with the first rule (Machines) left out of its one rules file. */
  function chartWithoutMachines(): Promise<string> {
    reducedChart ??= (async () => {
      const unpacked = path.join(tmp, 'chart');
      fs.mkdirSync(unpacked);
      await exec('tar', ['-xzf', chart, '-C', unpacked]);
      const rulesFile = path.join(unpacked, 'harvester-machine-controller', 'rbac', 'rules.yaml');
      const reduced = parse(fs.readFileSync(rulesFile, 'utf8')) as ChartRules;
      const removed = reduced.clusterRules.shift();
      assert.deepEqual(removed?.resources, ['machines']);
      fs.writeFileSync(rulesFile, stringify(reduced));
      await helm(['lint', path.join(unpacked, 'harvester-machine-controller')]);
      return path.join(unpacked, 'harvester-machine-controller');
    })();
    return reducedChart;
  }

  const readyz = async (port: number): Promise<number> =>
    (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status ?? 0;

  it('applied server-side to Rancher’s apiserver, the rules suffice: the controller with a token of its ServiceAccount leads and is ready, no denial', async () => {
    const { controller, logLines } = await installAndRun(chart, 'hmc-ok');
    // A replica that does not lead answers ready too: first the Lease, then its caches.
    await eventually(
      'the controller to become leader and ready',
      async () =>
        logLines.some((l) => l.includes('became leader')) && (await readyz(controller.port)) === 200,
      60_000,
    );
    const denied = logLines.filter((l) => /forbidden|cannot (list|watch|get|create|update|patch)/i.test(l));
    assert.deepEqual(denied, [], 'no RBAC denial');
    // And no more than that: another Lease or ConfigMap of its namespace is not its to change.
    const may = async (verb: string, resource: string, group: string, name: string): Promise<boolean> => {
      const review = await fixture.cp.admin.create<KubeObject & { status?: { allowed?: boolean } }>(
        Resources.subjectAccessReview,
        {
          apiVersion: 'authorization.k8s.io/v1',
          kind: 'SubjectAccessReview',
          metadata: { name: '' },
          spec: {
            user: 'system:serviceaccount:hmc-ok-system:hmc-ok',
            groups: [
              'system:serviceaccounts',
              'system:serviceaccounts:hmc-ok-system',
              'system:authenticated',
            ],
            resourceAttributes: { namespace: 'hmc-ok-system', verb, group, resource, name },
          },
        } as KubeObject,
      );
      return review.status?.allowed === true;
    };
    assert.equal(await may('update', 'leases', 'coordination.k8s.io', 'harvester-machine-controller'), true);
    assert.equal(await may('update', 'leases', 'coordination.k8s.io', 'kube-scheduler'), false);
    assert.equal(await may('get', 'leases', 'coordination.k8s.io', 'other'), false);
    assert.equal(await may('patch', 'configmaps', '', 'harvester-machine-controller-status'), true);
    assert.equal(await may('patch', 'configmaps', '', 'other-config'), false);
  });

  it('with one rule removed from rbac/rules.yaml, the same run is denied (so the check can fail)', async () => {
    const { controller, logLines } = await installAndRun(await chartWithoutMachines(), 'hmc-less');
    await eventually(
      'the controller to be denied listing Machines',
      () => Promise.resolve(logLines.some((l) => /forbidden/i.test(l) && l.includes('machines'))),
      60_000,
    );
    assert.notEqual(await readyz(controller.port), 200, 'not ready without the rule');
    // run() ends the process with status 1 when its controller cannot start (the Deployment
    // restarts it); here its exit hook records that instead.
    await eventually(
      'the controller to give up',
      () => Promise.resolve(exits.get('hmc-less')?.includes(1) === true),
      30_000,
    );
    assert.deepEqual(exits.get('hmc-ok'), [], 'the permitted controller keeps running');
  });

  it('the built `harvester-machine controller`, denied at start, exits 1 within seconds instead of hanging', async () => {
    // Installed as the chart without the Machines rule: the Machine informer's first list is denied.
    const { kubeconfigPath, ns, watched } = await install(await chartWithoutMachines(), 'hmc-proc');
    const executable = await harvesterMachineExecutable();
    const started = Date.now();
    const child = spawn(
      executable,
      ['controller', '--kubeconfig', kubeconfigPath, '--metrics-bind-address', '127.0.0.1:0'],
      {
        env: { ...unpackCacheEnv(), WATCH_NAMESPACES: watched, POD_NAMESPACE: ns },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (output += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (output += d));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    let timer: NodeJS.Timeout | undefined;
    try {
      const code = await Promise.race([
        exited,
        new Promise<string>((r) => (timer = setTimeout(() => r('still running'), 45_000))),
      ]);
      assert.equal(code, 1, output);
      assert.match(output, /controller failed to start/);
      assert.match(output, /forbidden/i);
      const took = Date.now() - started;
      assert.ok(took < 45_000, `exited after ${took} ms`);
    } finally {
      clearTimeout(timer);
      child.kill('SIGKILL');
    }
  });

  it('has values for image, namespaces and the deadline', () => {
    const values = parse(fs.readFileSync(path.join(CHART_DIR, 'values.yaml'), 'utf8')) as Record<
      string,
      unknown
    >;
    for (const key of ['image', 'watchNamespaces', 'credentialNamespace', 'gateDeadline'])
      assert.ok(key in values, key);
  });
});
