// The controller image through a real registry, as an operator ships it (docs/install.md,
// step 2): Debian's docker-registry (the CNCF distribution registry) on 127.0.0.1 with
// TLS from a CA made by the test; skopeo pushes the release's OCI archive to it, the registry
// serves the archive's manifest digest, and podman pulls the image by that digest, trusting
// that CA, and runs it with a read-only root.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { releaseArtifacts, type ReleaseArtifacts } from '../../sandbox/release/artifacts.js';
import { podman } from '../../sandbox/release/podman.js';
import { registryAvailable, startRegistry, type Registry } from '../../sandbox/release/registry.js';
import { tempRoot } from '../interop/support/repo.js';

const exec = promisify(execFile);
const tmp = tempRoot('hm-registry');
const skip = registryAvailable() ? false : 'no docker-registry: run scripts/setup-release-tools.sh';

async function archiveDigest(image: string): Promise<string> {
  const index = JSON.parse((await exec('tar', ['-xOf', image, './index.json'])).stdout) as {
    manifests: Array<{ digest: string }>;
  };
  return index.manifests[0]?.digest ?? '';
}

describe('the controller image through a registry over TLS', { timeout: 10 * 60_000, skip }, () => {
  let r: ReleaseArtifacts;
  let registry: Registry;
  let repository: string;
  let digest: string;
  before(async () => {
    r = await releaseArtifacts();
    registry = await startRegistry(tmp.dir);
    repository = `${registry.host}/harvester-machine/controller`;
    digest = await archiveDigest(r.image);
  });
  after(async () => {
    if (repository && digest)
      await podman(['rmi', '--force', `${repository}@${digest}`]).catch(() => undefined);
    await registry?.stop();
  });

  it('refuses a client that does not trust its CA: the TLS is real', async () => {
    await assert.rejects(
      exec('skopeo', ['inspect', `docker://${repository}:none`]),
      (err: { stderr?: string }) => /x509|certificate/i.test(err.stderr ?? ''),
    );
  });

  it('skopeo pushes the archive, and the registry serves it under the archive’s manifest digest', async () => {
    await exec('skopeo', [
      'copy',
      '--quiet',
      '--dest-cert-dir',
      registry.certDir,
      `oci-archive:${r.image}`,
      `docker://${repository}:${r.version}`,
    ]);
    const inspect = JSON.parse(
      (
        await exec(
          'skopeo',
          ['inspect', '--cert-dir', registry.certDir, `docker://${repository}:${r.version}`],
          {
            maxBuffer: 1 << 24,
          },
        )
      ).stdout,
    ) as { Digest: string; Labels: Record<string, string> };
    assert.equal(
      inspect.Digest,
      digest,
      'pushed without a change: the digest operators pin is the archive’s',
    );
    assert.equal(inspect.Labels['org.opencontainers.image.version'], r.version);
    const raw = (
      await exec('skopeo', [
        'inspect',
        '--raw',
        '--cert-dir',
        registry.certDir,
        `docker://${repository}@${digest}`,
      ])
    ).stdout;
    assert.equal(`sha256:${createHash('sha256').update(raw).digest('hex')}`, digest);
    const manifest = JSON.parse(raw) as { layers: Array<{ mediaType: string }> };
    assert.deepEqual(
      manifest.layers.map((l) => l.mediaType),
      ['application/vnd.oci.image.layer.v1.tar+zstd'],
    );
  });

  it('podman pulls it by digest, trusting the CA, and runs it with a read-only root', async () => {
    const ref = `${repository}@${digest}`;
    await podman(['pull', '--quiet', '--cert-dir', registry.certDir, ref]);
    const output = await podman([
      'run',
      '--rm',
      '--read-only',
      '--pull',
      'never',
      ...['--network', 'none', '--user', '65532:65532', '--cap-drop', 'ALL'],
      ...['--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=4096:4096'],
      ref,
      '--help',
    ]);
    assert.match(output, /^Usage: harvester-machine controller \[options\]/);
    const [repoDigest] = JSON.parse(
      await podman(['image', 'inspect', '--format', '{{json .RepoDigests}}', ref]),
    ) as string[];
    assert.equal(repoDigest, ref);
  });
});
