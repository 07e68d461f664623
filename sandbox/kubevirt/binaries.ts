// Finds (building once when missing) KubeVirt's virt-api and virt-controller and the objects
// virt-operator would install for them: see build-kubevirt.sh. The build is synchronous and
// announced on stderr.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../repo.js';
import { KUBEVIRT_VERSION } from './version.js';

export interface KubeVirtBuild {
  version: string;
  virtApi: string;
  virtController: string;
  /** One JSON object per line: CRDs, RBAC, webhook configurations, APIServices. */
  manifests: string;
}

export class KubeVirtBuildError extends Error {}

let cached: KubeVirtBuild | undefined;

export function ensureKubeVirt(): KubeVirtBuild {
  if (cached) return cached;
  const script = path.join(repoRoot(), 'sandbox', 'kubevirt', 'build-kubevirt.sh');
  const result = spawnSync('bash', [script, KUBEVIRT_VERSION], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (result.status !== 0)
    throw new KubeVirtBuildError(
      `building KubeVirt ${KUBEVIRT_VERSION} failed (exit ${result.status ?? result.signal}); the line above says which step and what to do`,
    );
  const line = result.stdout
    .trim()
    .split('\n')
    .find((l) => l.startsWith(`${KUBEVIRT_VERSION} `));
  const [, dir = '', manifests = ''] = line?.split(' ') ?? [];
  const build: KubeVirtBuild = {
    version: KUBEVIRT_VERSION,
    virtApi: path.join(dir, 'bin', 'virt-api'),
    virtController: path.join(dir, 'bin', 'virt-controller'),
    manifests,
  };
  if (!dir || !fs.existsSync(build.virtApi) || !fs.existsSync(build.manifests))
    throw new KubeVirtBuildError(`build-kubevirt.sh printed no usable directory for ${KUBEVIRT_VERSION}`);
  cached = build;
  return build;
}
