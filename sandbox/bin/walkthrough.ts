// The sandbox walkthrough (grows with the project): starts the two control planes
// that play Harvester and Rancher's local cluster, shows they are real, stops them.
import { startControlPlane } from '../control-plane/control-plane.js';
import { installCrds } from '../crds/install.js';

const step = async <T>(title: string, fn: () => Promise<T>): Promise<T> => {
  const t0 = Date.now();
  const result = await fn();
  console.log(`[${((Date.now() - t0) / 1000).toFixed(1)} s] ${title}`);
  return result;
};

const harvester = await step('Harvester control plane started (etcd, kube-apiserver, kube-controller-manager)', () =>
  startControlPlane({ name: 'harvester' }),
);
try {
  const rancher = await step("Rancher's local cluster started", () => startControlPlane({ name: 'rancher' }));
  try {
    const h = await step('Harvester and KubeVirt resource definitions installed', () => installCrds(harvester.admin, 'harvester'));
    const r = await step('Cluster API and Rancher resource definitions installed', () => installCrds(rancher.admin, 'rancher'));
    console.log(`  Harvester: ${harvester.server} (${h.length} CRDs)\n  Rancher:   ${rancher.server} (${r.length} CRDs)`);
  } finally {
    await step("Rancher's local cluster stopped", () => rancher.stop());
  }
} finally {
  await step('Harvester control plane stopped', () => harvester.stop());
}
