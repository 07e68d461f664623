// Test support for the front proxy: both control planes and the proxy for one test file,
// raw HTTPS requests (to see status lines, headers and bytes as a client gets them), and
// VMs/VMIs in a chosen state.
import https from 'node:https';
import { after, before } from 'node:test';
import type { KubeClient } from '../../src/kube/client.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { startControlPlane, type ControlPlane } from '../control-plane/control-plane.js';
import { installCrds } from '../crds/install.js';
import { createRancherCluster } from '../rancher/cluster.js';
import { startFrontProxy, type FrontProxy } from './front-proxy.js';

export const TEST_CLUSTER_ID = 'c-m-sandbox';

export interface ProxyFixture {
  readonly harvester: ControlPlane;
  readonly rancher: ControlPlane;
  readonly proxy: FrontProxy;
}

/** Harvester and Rancher control planes, their resource definitions and the proxy. */
export function useFrontProxy(): ProxyFixture {
  let harvester: ControlPlane | undefined;
  let rancher: ControlPlane | undefined;
  let proxy: FrontProxy | undefined;
  before(async () => {
    [harvester, rancher] = await Promise.all([
      startControlPlane({
        name: 'proxy-harvester',
        beforeControllerManager: async (admin) => void (await installCrds(admin, 'harvester')),
      }),
      startControlPlane({ name: 'proxy-rancher', controllerManager: false }),
    ]);
    await installCrds(rancher.admin, 'rancher');
    await createRancherCluster(rancher.admin, { clusterId: TEST_CLUSTER_ID, displayName: 'harvester' });
    proxy = await startFrontProxy({ harvester, rancher, clusterId: TEST_CLUSTER_ID });
  });
  after(async () => {
    await proxy?.stop();
    await Promise.all([harvester?.stop(), rancher?.stop()]);
  });
  const need = <T>(value: T | undefined): T => {
    if (!value) throw new Error('the front proxy fixture is not started yet (use it inside a test)');
    return value;
  };
  return {
    get harvester() {
      return need(harvester);
    },
    get rancher() {
      return need(rancher);
    },
    get proxy() {
      return need(proxy);
    },
  };
}

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One request as a client sends it; the answer's bytes untouched. */
export function send(
  proxy: { url: string; caPem: string },
  req: { method?: string; path: string; token?: string; body?: string; headers?: Record<string, string> },
): Promise<RawResponse> {
  const url = new URL(req.path, proxy.url);
  return new Promise((resolve, reject) => {
    const out = https.request(
      {
        hostname: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method: req.method ?? 'GET',
        ca: proxy.caPem,
        agent: false,
        headers: {
          ...(req.token ? { Authorization: `Bearer ${req.token}` } : {}),
          ...(req.body !== undefined ? { 'Content-Type': 'application/json' } : {}),
          ...req.headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        res.on('error', reject);
      },
    );
    out.on('error', reject);
    out.end(req.body);
  });
}

export interface VmObject extends KubeObject {
  spec: { runStrategy?: string; running?: boolean; template: unknown };
  status?: { stateChangeRequests?: Array<{ action: string; uid?: string }>; printableStatus?: string };
}

/** A VM with the given run strategy and, when a phase is given, a VMI in that phase. */
export async function createVm(
  admin: KubeClient,
  at: { namespace: string; name: string },
  runStrategy: string,
  vmiPhase?: string,
): Promise<{ vm: VmObject; vmiUid?: string }> {
  const vm = await admin.create<VmObject>(Resources.virtualMachine, {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachine',
    metadata: at,
    spec: { runStrategy, template: { spec: { domain: { devices: {} } } } },
  });
  if (!vmiPhase) return { vm };
  const vmi = await admin.create<KubeObject & { status: { phase: string } }>(
    Resources.virtualMachineInstance,
    {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachineInstance',
      metadata: at,
      spec: { domain: { devices: {} } },
      status: { phase: vmiPhase },
    } as KubeObject & { status: { phase: string } },
  );
  return { vm, vmiUid: vmi.metadata.uid ?? '' };
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A Role with these rules in the namespace, bound to a user. */
export async function grantRole(
  admin: KubeClient,
  opts: {
    namespace: string;
    user: string;
    rules: Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }>;
  },
): Promise<void> {
  const name = `grant-${opts.user.replace(/[^a-z0-9-]/g, '-')}`.slice(0, 60);
  await admin.create(Resources.role, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name, namespace: opts.namespace },
    rules: opts.rules,
  } as KubeObject);
  await admin.create(Resources.roleBinding, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name, namespace: opts.namespace },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: opts.user }],
  } as KubeObject);
}

export const LIFECYCLE_RULE = {
  apiGroups: ['subresources.kubevirt.io'],
  resources: ['virtualmachines/start', 'virtualmachines/stop', 'virtualmachines/restart'],
  verbs: ['update'],
};

/**
 * New RBAC reaches the authorizer through an informer, a moment after it was written:
 * retries `attempt` while it is Forbidden (up to 5 s), then returns its last outcome.
 */
export async function untilAllowed<T>(attempt: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    try {
      return await attempt();
    } catch (err) {
      const forbidden = (err as { kind?: string }).kind === 'Forbidden';
      if (!forbidden || Date.now() > deadline) throw err;
      await sleep(100);
    }
  }
}
