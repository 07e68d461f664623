// The packaged chart as an operator uses it, with real helm: lint and template with the
// default values and with every operator-facing value set, what each value changes in the
// manifests, a bad value refused naming it, and both renders applied server-side to
// Rancher's apiserver (ServiceMonitor included).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { releaseArtifacts } from '../../sandbox/release/artifacts.js';
import { applyServerSide, helm, renderChart } from '../../sandbox/release/helm.js';
import { useControlPlane } from '../support/control-plane-fixture.js';

const DIGEST = `sha256:${'0123456789abcdef'.repeat(4)}`;
const CUSTOM = {
  image: { repository: 'registry.example/harvester-machine/controller', tag: 'ignored', digest: DIGEST },
  imagePullSecrets: [{ name: 'registry-credentials' }],
  priorityClassName: 'system-cluster-critical',
  extraEnv: [
    { name: 'HTTPS_PROXY', value: 'http://proxy.example:3128' },
    { name: 'NO_PROXY', value: '10.43.0.1,.svc' },
  ],
  serviceMonitor: { enabled: true, labels: { release: 'rancher-monitoring' } },
  resources: { requests: { cpu: '50m', memory: '96Mi' }, limits: { memory: '192Mi' } },
  affinity: {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [
          { matchExpressions: [{ key: 'node-role.kubernetes.io/control-plane', operator: 'Exists' }] },
        ],
      },
    },
  },
  tolerations: [{ key: 'node-role.kubernetes.io/control-plane', operator: 'Exists', effect: 'NoSchedule' }],
  watchNamespaces: ['fleet-default', 'fleet-local'],
  credentials: {
    labelSelector: 'harvester-machine.io/credential=true',
    fieldSelector: 'type=provisioning.cattle.io/cloud-credential',
  },
  guestMaxVolumes: 500,
};

/** The environment variables the controller reads, as its own --help names them. */
function controllerEnvNames(): string[] {
  const bin = path.resolve(import.meta.dirname, '../../src/bin/harvester-machine.js');
  const help = execFileSync(process.execPath, [bin, 'controller', '--help'], { encoding: 'utf8' });
  return [...new Set([...help.matchAll(/\(env ([A-Z_]+)/g)].map((m) => m[1] as string))];
}

interface Container {
  image: string;
  args?: string[];
  env: Array<{ name: string; value?: string }>;
  resources: unknown;
  securityContext: Record<string, unknown>;
}
interface PodTemplate {
  metadata: { labels: Record<string, string> };
  spec: {
    serviceAccountName: string;
    priorityClassName?: string;
    imagePullSecrets?: Array<{ name: string }>;
    securityContext: Record<string, unknown>;
    affinity?: Record<string, unknown>;
    tolerations?: unknown[];
    containers: Container[];
  };
}
type Workload = KubeObject & {
  spec: { template: PodTemplate; selector?: { matchLabels: Record<string, string> } };
};
type Selecting = KubeObject & { spec: { selector: { matchLabels: Record<string, string> } } };

const of = (objects: KubeObject[], kind: string): KubeObject[] => objects.filter((o) => o.kind === kind);
const one = <T extends KubeObject>(objects: KubeObject[], kind: string): T => {
  const found = of(objects, kind);
  assert.equal(found.length, 1, `one ${kind}`);
  return found[0] as T;
};
const selects = (selector: Record<string, string>, labels: Record<string, string>): boolean =>
  Object.entries(selector).every(([k, v]) => labels[k] === v);

describe('the packaged chart', { timeout: 10 * 60_000 }, () => {
  const fixture = useControlPlane({ name: 'rancher', crds: 'rancher' });
  let chart = '';
  let version = '';
  let defaults: KubeObject[] = [];
  let custom: KubeObject[] = [];
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-chart-'));
  after(() => fs.rmSync(tmp, { recursive: true, force: true }));
  before(async () => {
    ({ chart, version } = await releaseArtifacts());
    [defaults, custom] = await Promise.all([
      renderChart(chart, { release: 'hmc', namespace: 'cattle-system' }),
      renderChart(chart, { release: 'hmc', namespace: 'cattle-system', values: CUSTOM }),
    ]);
  });

  it('passes helm lint with the default values and with every operator-facing value set', async () => {
    const values = path.join(tmp, 'custom.json');
    fs.writeFileSync(values, JSON.stringify(CUSTOM));
    await helm(['lint', chart, '--strict']);
    await helm(['lint', chart, '--strict', '--values', values]);
  });

  it('by default: the image by tag, 2 replicas spread over nodes, a PDB for them, locked-down pods, no ServiceMonitor', () => {
    const deployment = one<Workload>(defaults, 'Deployment');
    const pod = deployment.spec.template;
    const container = pod.spec.containers[0] as Container;
    assert.equal(container.image, `harvester-machine/controller:${version}`);
    assert.equal((deployment.spec as { replicas?: number }).replicas, 2);
    assert.deepEqual(pod.spec.affinity, {
      podAntiAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [
          {
            weight: 100,
            podAffinityTerm: {
              topologyKey: 'kubernetes.io/hostname',
              labelSelector: { matchLabels: deployment.spec.selector?.matchLabels },
            },
          },
        ],
      },
    });
    const pdb = one<Selecting & { spec: { minAvailable: number } }>(defaults, 'PodDisruptionBudget');
    assert.equal(pdb.spec.minAvailable, 1);
    assert.ok(
      selects(pdb.spec.selector.matchLabels, pod.metadata.labels),
      'the PDB selects the controller pods',
    );
    const hookPod = one<Workload>(defaults, 'Job').spec.template;
    assert.ok(
      !selects(pdb.spec.selector.matchLabels, hookPod.metadata.labels),
      'and not the pre-delete Job’s',
    );
    for (const p of [pod, hookPod]) {
      assert.deepEqual(p.spec.securityContext, {
        runAsNonRoot: true,
        runAsUser: 65532,
        runAsGroup: 65532,
        fsGroup: 65532,
        seccompProfile: { type: 'RuntimeDefault' },
      });
      assert.deepEqual((p.spec.containers[0] as Container).securityContext, {
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        runAsNonRoot: true,
        runAsUser: 65532,
        capabilities: { drop: ['ALL'] },
        seccompProfile: { type: 'RuntimeDefault' },
      });
      assert.equal(p.spec.imagePullSecrets, undefined);
      assert.equal(p.spec.priorityClassName, undefined);
    }
    assert.deepEqual(of(defaults, 'ServiceMonitor'), []);
  });

  it('the pre-delete Job runs `controller remove-hooks` with the same image, ServiceAccount and configuration', () => {
    const deployment = one<Workload>(defaults, 'Deployment').spec.template;
    const job = one<Workload>(defaults, 'Job');
    assert.equal(job.metadata.annotations?.['helm.sh/hook'], 'pre-delete');
    assert.match(job.metadata.annotations?.['helm.sh/hook-delete-policy'] ?? '', /hook-succeeded/);
    const pod = job.spec.template;
    const container = pod.spec.containers[0] as Container;
    assert.equal(container.image, (deployment.spec.containers[0] as Container).image);
    assert.equal(pod.spec.serviceAccountName, deployment.spec.serviceAccountName);
    assert.deepEqual(container.args, ['remove-hooks', '--hold', '5m']);
    const names = (c: Container): string[] => c.env.map((e) => e.name);
    for (const name of ['WATCH_NAMESPACES', 'HOOK_NAME', 'POD_NAMESPACE', 'POD_NAME', 'LOG_LEVEL'])
      assert.ok(
        names(container).includes(name) && names(deployment.spec.containers[0] as Container).includes(name),
        name,
      );
  });

  it('with values: image by digest, pull secrets, priority class, proxy env, resources, affinity, tolerations, ServiceMonitor', () => {
    for (const kind of ['Deployment', 'Job']) {
      const pod = one<Workload>(custom, kind).spec.template;
      const container = pod.spec.containers[0] as Container;
      assert.equal(container.image, `registry.example/harvester-machine/controller@${DIGEST}`, kind);
      assert.deepEqual(pod.spec.imagePullSecrets, [{ name: 'registry-credentials' }], kind);
      assert.equal(pod.spec.priorityClassName, 'system-cluster-critical', kind);
      for (const e of CUSTOM.extraEnv)
        assert.deepEqual(
          container.env.find((v) => v.name === e.name),
          e,
          kind,
        );
      assert.deepEqual(pod.spec.tolerations, CUSTOM.tolerations, kind);
    }
    const pod = one<Workload>(custom, 'Deployment').spec.template;
    assert.deepEqual(pod.spec.affinity, CUSTOM.affinity, 'affinity replaces the default spread');
    assert.deepEqual((pod.spec.containers[0] as Container).resources, CUSTOM.resources);
    const service = one<KubeObject & { spec: { ports: Array<{ name: string }> } }>(custom, 'Service');
    const monitor = one<Selecting & { spec: { endpoints: Array<{ port: string; path: string }> } }>(
      custom,
      'ServiceMonitor',
    );
    assert.equal(monitor.metadata.labels?.release, 'rancher-monitoring');
    assert.ok(
      selects(monitor.spec.selector.matchLabels, service.metadata.labels ?? {}),
      'selects the metrics Service',
    );
    assert.deepEqual(
      monitor.spec.endpoints.map((e) => [e.port, e.path]),
      [[service.spec.ports[0]?.name, '/metrics']],
    );
    assert.deepEqual(
      of(custom, 'RoleBinding')
        .map((b) => b.metadata.namespace)
        .filter((n) => n?.startsWith('fleet-')),
      ['fleet-default', 'fleet-local'],
    );
  });

  it('sets every setting the controller reads from its environment (but the in-cluster ones) from a value', () => {
    const inCluster = new Set(['RANCHER_KUBECONFIG', 'LEADER_ELECT']);
    const wanted = controllerEnvNames().filter((name) => !inCluster.has(name));
    assert.ok(wanted.length >= 10, `the help names the controller's settings: ${wanted.join(', ')}`);
    const container = one<Workload>(custom, 'Deployment').spec.template.spec.containers[0] as Container;
    const set = new Set(container.env.map((e) => e.name));
    assert.deepEqual(
      wanted.filter((name) => !set.has(name)),
      [],
      'settings the chart cannot set',
    );
    assert.equal(container.env.find((e) => e.name === 'GUEST_MAX_VOLUMES')?.value, '500');
  });

  it('refuses a digest that is not one, naming image.digest', async () => {
    await assert.rejects(
      renderChart(chart, {
        release: 'hmc',
        namespace: 'cattle-system',
        values: { image: { digest: 'latest' } },
      }),
      /image\.digest: "latest" is not a digest/,
    );
  });

  it('both renders apply server-side to Rancher’s apiserver', async () => {
    const { cp } = fixture;
    for (const name of ['cattle-system', 'cattle-global-data', 'fleet-default', 'fleet-local', 'hm-custom'])
      await cp.admin.create(Resources.namespace, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    const applied = await applyServerSide(cp.admin, defaults);
    assert.equal(applied.length, defaults.length);
    const second = await renderChart(chart, {
      release: 'hmc-custom',
      namespace: 'hm-custom',
      values: CUSTOM,
    });
    const appliedCustom = await applyServerSide(cp.admin, second);
    const monitor = appliedCustom.find((o) => o.kind === 'ServiceMonitor');
    assert.equal(monitor?.metadata.namespace, 'hm-custom');
    assert.ok(monitor?.metadata.uid, 'the ServiceMonitor was stored');
  });
});
