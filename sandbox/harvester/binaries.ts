// Finds (building once when missing) Harvester's own `harvester` and `webhook` and the module's
// charts: see build-harvester.sh. The build is synchronous and announced on stderr.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../repo.js';
import { HARVESTER_VERSION } from './version.js';

export interface HarvesterBuild {
  version: string;
  /** The build's cache directory (keyed by Harvester's and Go's versions). */
  dir: string;
  harvester: string;
  webhook: string;
  /** The module's deploy/charts/harvester-crd/templates (Harvester's own CRDs). */
  crdDir: string;
  /** The Longhorn and harvester-network-controller CRDs, as their modules publish them. */
  dependencyCrdDir: string;
}

export class HarvesterBuildError extends Error {}

let cached: HarvesterBuild | undefined;

export function ensureHarvesterBuild(): HarvesterBuild {
  if (cached) return cached;
  const script = path.join(repoRoot(), 'sandbox', 'harvester', 'build-harvester.sh');
  const result = spawnSync('bash', [script, HARVESTER_VERSION], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (result.status !== 0)
    throw new HarvesterBuildError(
      `building Harvester ${HARVESTER_VERSION} failed (exit ${result.status ?? result.signal}); the line above says which step and what to do`,
    );
  const line = result.stdout
    .trim()
    .split('\n')
    .find((l) => l.startsWith(`${HARVESTER_VERSION} `));
  const dir = line?.split(' ')[1] ?? '';
  const build: HarvesterBuild = {
    version: HARVESTER_VERSION,
    dir,
    harvester: path.join(dir, 'bin', 'harvester'),
    webhook: path.join(dir, 'bin', 'webhook'),
    crdDir: path.join(dir, 'charts', 'harvester-crd', 'templates'),
    dependencyCrdDir: path.join(dir, 'crds'),
  };
  if (
    !dir ||
    !fs.existsSync(build.harvester) ||
    !fs.existsSync(build.webhook) ||
    !fs.existsSync(build.crdDir) ||
    !fs.existsSync(build.dependencyCrdDir)
  )
    throw new HarvesterBuildError(`build-harvester.sh printed no usable directory for ${HARVESTER_VERSION}`);
  cached = build;
  return build;
}
