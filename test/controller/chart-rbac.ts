// The controller's RBAC, from the one file the Helm chart includes: the integration test
// binds exactly these rules to the user it runs the controller as, and chart-rbac_test.ts
// checks that the chart's template renders exactly these rules.
import fs from 'node:fs';
import path from 'node:path';
import { parse, parseAllDocuments, stringify } from 'yaml';
import type { KubeClient } from '../../src/kube/client.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import type { PolicyRule } from '../../sandbox/control-plane/access.js';
import { repoRoot } from '../../sandbox/control-plane/binaries.js';

export const CHART_DIR = path.join(repoRoot(), 'deploy', 'helm', 'harvester-machine-controller');

export interface ChartRules {
  clusterRules: PolicyRule[];
  credentialRules: PolicyRule[];
  systemRules: PolicyRule[];
}

export function chartRules(): ChartRules {
  return parse(fs.readFileSync(path.join(CHART_DIR, 'rbac', 'rules.yaml'), 'utf8')) as ChartRules;
}

/**
 * templates/rbac.yaml after a minimal substitution (not Helm): the expressions it uses,
 * with one watched namespace; `if` keeps its first branch, `range` its body once.
 */
export function renderRbacTemplate(v: {
  release: string;
  namespace: string;
  watchNamespace: string;
  credentialNamespace: string;
}): KubeObject[] {
  const rules = chartRules();
  const lines = fs.readFileSync(path.join(CHART_DIR, 'templates', 'rbac.yaml'), 'utf8').split('\n');
  const out: string[] = [];
  let skipping = false;
  for (const line of lines) {
    const control = /^\{\{-?\s*(if|else|end|range|\$\w+ :=)/.exec(line.trim());
    if (control) {
      if (control[1] === 'else') skipping = true;
      else if (control[1] === 'end' && skipping) skipping = false;
      continue;
    }
    if (skipping) continue;
    const section = /^rules: \{\{- toYaml \$rules\.(\w+) \| nindent 2 \}\}$/.exec(line);
    if (section) {
      out.push(
        'rules:',
        ...stringify(rules[section[1] as keyof ChartRules])
          .trimEnd()
          .split('\n')
          .map((l) => `  ${l}`),
      );
      continue;
    }
    out.push(
      line
        .replace(/ \{\{- include "hmc\.labels" \. \| nindent \d+ \}\}/, ' {}')
        .replaceAll('{{ $name }}', v.release)
        .replaceAll('{{ $.Release.Namespace }}', v.namespace)
        .replaceAll('{{ .Release.Namespace }}', v.namespace)
        .replaceAll('{{ .Values.credentialNamespace }}', v.credentialNamespace)
        .replaceAll('{{ . }}', v.watchNamespace),
    );
  }
  const text = out.join('\n');
  if (text.includes('{{')) throw new Error(`unsubstituted template expression left in rbac.yaml:\n${text}`);
  return parseAllDocuments(text)
    .map((d) => d.toJS() as KubeObject | null)
    .filter((o): o is KubeObject => o !== null);
}

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
