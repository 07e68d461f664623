// Real helm (scripts/setup-release-tools.sh builds it once into the cache): lint, template
// and package the controller's chart, and apply what it renders to an apiserver the way
// `kubectl apply --server-side` does.
import { keyOf, keyText } from '../../src/api/object-key.js';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import type { KubeClient } from '../../src/kube/client.js';
import { resourcePath, type KubeObject, type ResourceType } from '../../src/kube/resources.js';
import { repoRoot } from '../repo.js';

const run = promisify(execFile);

let helmPath: Promise<string> | undefined;

/** The helm binary (built by setup; this only finds it, in a fraction of a second). */
export function helmBinary(): Promise<string> {
  helmPath ??= run('bash', ['scripts/setup-release-tools.sh'], { cwd: repoRoot() }).then(({ stdout }) =>
    path.join(stdout.trim(), 'helm'),
  );
  return helmPath;
}

/** Runs helm; rejects with helm's own message when it fails. */
export async function helm(args: string[]): Promise<string> {
  const bin = await helmBinary();
  try {
    return (
      await run(bin, args, {
        maxBuffer: 16 * 1024 * 1024,
        env: { ...process.env, HELM_CACHE_HOME: os.tmpdir() },
      })
    ).stdout;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`helm ${args[0] ?? ''} failed: ${e.stderr?.trim() || e.message}`, { cause: err });
  }
}

export interface RenderOptions {
  release: string;
  namespace: string;
  values?: Record<string, unknown>;
}

/** `helm template` of a chart (directory or packaged .tgz) with values, as objects. */
export async function renderChart(chart: string, opts: RenderOptions): Promise<KubeObject[]> {
  const args = ['template', opts.release, chart, '--namespace', opts.namespace];
  let dir: string | undefined;
  if (opts.values) {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-values-'));
    fs.writeFileSync(path.join(dir, 'values.json'), JSON.stringify(opts.values));
    args.push('--values', path.join(dir, 'values.json'));
  }
  try {
    return parseAllDocuments(await helm(args))
      .map((d) => d.toJS() as KubeObject | null)
      .filter((o): o is KubeObject => o !== null);
  } finally {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The kinds the chart renders. */
const KINDS: Record<string, ResourceType> = {
  ServiceAccount: {
    group: '',
    version: 'v1',
    plural: 'serviceaccounts',
    kind: 'ServiceAccount',
    namespaced: true,
  },
  Service: { group: '', version: 'v1', plural: 'services', kind: 'Service', namespaced: true },
  ClusterRole: {
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    plural: 'clusterroles',
    kind: 'ClusterRole',
    namespaced: false,
  },
  ClusterRoleBinding: {
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    plural: 'clusterrolebindings',
    kind: 'ClusterRoleBinding',
    namespaced: false,
  },
  Role: {
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    plural: 'roles',
    kind: 'Role',
    namespaced: true,
  },
  RoleBinding: {
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    plural: 'rolebindings',
    kind: 'RoleBinding',
    namespaced: true,
  },
  Deployment: { group: 'apps', version: 'v1', plural: 'deployments', kind: 'Deployment', namespaced: true },
  Job: { group: 'batch', version: 'v1', plural: 'jobs', kind: 'Job', namespaced: true },
  PodDisruptionBudget: {
    group: 'policy',
    version: 'v1',
    plural: 'poddisruptionbudgets',
    kind: 'PodDisruptionBudget',
    namespaced: true,
  },
  ServiceMonitor: {
    group: 'monitoring.coreos.com',
    version: 'v1',
    plural: 'servicemonitors',
    kind: 'ServiceMonitor',
    namespaced: true,
  },
};

export function resourceTypeOf(obj: KubeObject): ResourceType {
  const type = KINDS[obj.kind ?? ''];
  if (!type)
    throw new Error(`the chart rendered a ${obj.kind ?? 'kindless object'} this helper does not know`);
  return type;
}

/** Server-side apply (fieldManager helm-test, force), in the order helm installs: RBAC before workloads. */
export async function applyServerSide(client: KubeClient, objects: KubeObject[]): Promise<KubeObject[]> {
  const applied: KubeObject[] = [];
  for (const obj of objects) {
    const type = resourceTypeOf(obj);
    const at = keyOf(obj);
    applied.push(
      await client.call<KubeObject>({
        method: 'PATCH',
        path: resourcePath(type, at),
        query: { fieldManager: 'helm-test', force: true },
        body: JSON.stringify(obj),
        contentType: 'application/apply-patch+yaml',
        operation: `apply ${obj.kind ?? ''} ${keyText(at.namespace, at.name)}`,
      }),
    );
  }
  return applied;
}
