// The controller's RBAC, from the one file the Helm chart includes: the integration test
// binds exactly these rules to the user it runs the controller as, and chart-rbac_test.ts
// checks that helm renders exactly these rules and that they suffice (and that one less
// does not) for the controller run with a token of the chart's ServiceAccount.
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import type { KubeClient } from '../../src/kube/client.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import type { PolicyRule } from '../../sandbox/control-plane/access.js';
import { repoRoot } from '../../sandbox/control-plane/binaries.js';
import { renderChart } from '../../sandbox/release/helm.js';

export const CHART_DIR = path.join(repoRoot(), 'deploy', 'helm', 'harvester-machine-controller');

export interface ChartRules {
  clusterRules: PolicyRule[];
  credentialRules: PolicyRule[];
  systemRules: PolicyRule[];
}

export function chartRules(): ChartRules {
  return parse(fs.readFileSync(path.join(CHART_DIR, 'rbac', 'rules.yaml'), 'utf8')) as ChartRules;
}

/** The RBAC objects of the chart (a directory or a packaged .tgz) as real helm renders them. */
export async function renderChartRbac(
  chart: string,
  opts: { release: string; namespace: string; values?: Record<string, unknown> },
): Promise<KubeObject[]> {
  return (await renderChart(chart, opts)).filter((o) => RBAC_KINDS.includes(o.kind ?? ''));
}
const RBAC_KINDS = ['ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'];

/** Binds the chart's rules to a user, as the chart binds them to its ServiceAccount. */
export async function bindChartRbac(
  admin: KubeClient,
  user: string,
  at: { watchNamespaces: string[]; credentialNamespace: string; systemNamespace: string },
): Promise<void> {
  const rules = chartRules();
  const id = `hmc-${Math.random().toString(36).slice(2, 8)}`;
  const subject = [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }];
  const role = async (name: string, r: PolicyRule[]): Promise<void> => {
    await admin.create(Resources.clusterRole, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name },
      rules: r,
    } as KubeObject);
  };
  const bind = async (namespace: string, roleName: string): Promise<void> => {
    await admin.create(Resources.roleBinding, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: roleName, namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: roleName },
      subjects: subject,
    } as KubeObject);
  };
  await role(`${id}-cluster`, rules.clusterRules);
  await role(`${id}-credentials`, rules.credentialRules);
  await role(`${id}-system`, rules.systemRules);
  for (const ns of at.watchNamespaces) await bind(ns, `${id}-cluster`);
  await bind(at.credentialNamespace, `${id}-credentials`);
  await bind(at.systemNamespace, `${id}-system`);
}
