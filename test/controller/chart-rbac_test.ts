// The chart grants exactly the rules the controller's integration test runs under (and
// that test fails on any permission it lacks).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { CHART_DIR, chartRules, renderRbacTemplate } from './chart-rbac.js';

interface Rbac {
  kind?: string;
  metadata: { name?: string; namespace?: string };
  rules?: unknown;
  roleRef?: { kind: string; name: string };
  subjects?: Array<{ kind: string; name: string; namespace?: string }>;
}

describe('Helm chart RBAC', () => {
  const docs = renderRbacTemplate({
    release: 'hmc',
    namespace: 'cattle-system',
    watchNamespace: 'fleet-default',
    credentialNamespace: 'cattle-global-data',
  }) as Rbac[];
  const rules = chartRules();
  const find = (kind: string, namespace?: string): Rbac | undefined =>
    docs.find((d) => d.kind === kind && d.metadata.namespace === namespace);

  it('renders the ClusterRole and both Roles with exactly the rules of rbac/rules.yaml', () => {
    assert.deepEqual(find('ClusterRole')?.rules, rules.clusterRules);
    assert.deepEqual(find('Role', 'cattle-global-data')?.rules, rules.credentialRules);
    assert.deepEqual(find('Role', 'cattle-system')?.rules, rules.systemRules);
  });

  it('binds them to the chart ServiceAccount only where they are needed', () => {
    const bindings = docs.filter((d) => d.kind === 'RoleBinding');
    assert.deepEqual(bindings.map((b) => [b.metadata.namespace, b.roleRef?.kind, b.roleRef?.name]).sort(), [
      ['cattle-global-data', 'Role', 'hmc-credentials'],
      ['cattle-system', 'Role', 'hmc-system'],
      ['fleet-default', 'ClusterRole', 'hmc'],
    ]);
    for (const b of bindings)
      assert.deepEqual(b.subjects, [{ kind: 'ServiceAccount', name: 'hmc', namespace: 'cattle-system' }]);
    assert.equal(find('ClusterRoleBinding'), undefined, 'no cluster-wide binding when namespaces are listed');
  });

  it('grants no write on Secrets, and reads no Secret outside the credential namespace', () => {
    const all = [...rules.clusterRules, ...rules.systemRules];
    assert.ok(!all.some((r) => r.resources.includes('secrets')));
    assert.deepEqual(rules.credentialRules.find((r) => r.resources.includes('secrets'))?.verbs, [
      'list',
      'watch',
    ]);
    assert.ok(!JSON.stringify(rules).includes('"*"'), 'no wildcard');
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
