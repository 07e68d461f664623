// Finds (building once when missing) the control-plane binaries: see build-binaries.sh.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../repo.js';

export { repoRoot };

export interface ControlPlaneBinaries {
  etcd: string;
  kubeApiserver: string;
  kubeControllerManager: string;
  kubeScheduler: string;
}

export class ControlPlaneBuildError extends Error {}

let cached: ControlPlaneBinaries | undefined;

export function ensureControlPlaneBinaries(): ControlPlaneBinaries {
  if (cached) return cached;
  const script = path.join(repoRoot(), 'sandbox', 'control-plane', 'build-binaries.sh');
  const result = spawnSync('bash', [script], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (result.status !== 0) {
    throw new ControlPlaneBuildError(
      `building the control plane failed (exit ${result.status ?? result.signal}); the line above says which step and what to do`,
    );
  }
  const binDir = result.stdout.trim().split('\n').pop() ?? '';
  const etcd = ['/usr/bin/etcd', '/usr/local/bin/etcd'].find((p) => fs.existsSync(p)) ?? 'etcd';
  cached = {
    etcd,
    kubeApiserver: path.join(binDir, 'kube-apiserver'),
    kubeControllerManager: path.join(binDir, 'kube-controller-manager'),
    kubeScheduler: path.join(binDir, 'kube-scheduler'),
  };
  return cached;
}
