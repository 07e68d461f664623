// Finds (building once when missing) Cluster API's manager, CRDs and webhook configuration for
// a version: see build-cluster-api.sh. The build is synchronous and announced on stderr.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../repo.js';

export interface ClusterApiBuild {
  version: string;
  manager: string;
  crdDir: string;
  webhookManifest: string;
}

export class ClusterApiBuildError extends Error {}

const cached = new Map<string, ClusterApiBuild>();

export function ensureClusterApi(version: string): ClusterApiBuild {
  const known = cached.get(version);
  if (known) return known;
  const script = path.join(repoRoot(), 'sandbox', 'capi', 'build-cluster-api.sh');
  const result = spawnSync('bash', [script, version], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (result.status !== 0)
    throw new ClusterApiBuildError(
      `building Cluster API ${version} failed (exit ${result.status ?? result.signal}); the line above says which step and what to do`,
    );
  const line = result.stdout
    .trim()
    .split('\n')
    .find((l) => l.startsWith(`${version} `));
  const dir = line?.slice(version.length + 1) ?? '';
  const build: ClusterApiBuild = {
    version,
    manager: path.join(dir, 'bin', 'manager'),
    crdDir: path.join(dir, 'crds'),
    webhookManifest: path.join(dir, 'webhook', 'manifests.yaml'),
  };
  if (!dir || !fs.existsSync(build.manager))
    throw new ClusterApiBuildError(`build-cluster-api.sh printed no directory for ${version}`);
  cached.set(version, build);
  return build;
}
