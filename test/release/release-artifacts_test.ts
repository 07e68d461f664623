// What `npm run release` writes (scripts/release.sh, run on the cached executable): the
// node driver tarball as Rancher's NodeDriver URL expects it, its checksum file, the
// executable in it answering rancher-machine's plugin handshake and, under another name, the
// CLI; the controller image's contents and labels, and that it starts without writing to
// its file system; the packaged chart pointing at that image.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { driverRegistry } from '../../src/plugin/driver-types.js';
import { goEmptyStruct, goInt, goString } from '../../src/plugin/gob/go-types.js';
import { RpcTestClient } from '../../src/plugin/testing/rpc-test-client.js';
import {
  CONTROLLER_IMAGE_ENV,
  releaseArtifacts,
  type ReleaseArtifacts,
} from '../../sandbox/release/artifacts.js';
import { loadImage, podman } from '../../sandbox/release/podman.js';
import { repoRoot } from '../../sandbox/repo.js';
import { PLUGIN_ENV, startPlugin } from '../interop/support/plugin-process.js';
import { tempRoot } from '../interop/support/repo.js';

const exec = promisify(execFile);
const tmp = tempRoot('hm-release');
const BARE_ENV = { PATH: '/nonexistent', HOME: '/nonexistent' };
/** The image's XDG_CACHE_HOME: where its payload is unpacked, read-only. */
const IMAGE_CACHE = '/var/cache';

/** Every file below dir, relative, sorted. */
function listTree(dir: string, rel = ''): string[] {
  return fs
    .readdirSync(path.join(dir, rel), { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? listTree(dir, path.join(rel, e.name)) : [path.join(rel, e.name)]))
    .sort();
}

async function tarList(archive: string, ...flags: string[]): Promise<string[]> {
  const { stdout } = await exec('tar', [...flags, '--numeric-owner', '-tvf', archive], {
    maxBuffer: 1 << 24,
  });
  return stdout.trim().split('\n');
}
async function tarRead(archive: string, member: string): Promise<string> {
  return (await exec('tar', ['-xOf', archive, member], { maxBuffer: 1 << 24 })).stdout;
}

describe('the release artifacts', { timeout: 10 * 60_000 }, () => {
  let r: ReleaseArtifacts;
  before(async () => {
    r = await releaseArtifacts();
  });

  it('has the checksum file in sha256sum format, and it matches the tarball', async () => {
    const line = fs.readFileSync(r.driverChecksum, 'utf8');
    assert.match(line, /^[0-9a-f]{64} {2}docker-machine-driver-harvester-amd64\.tar\.gz\n$/);
    await exec('sha256sum', ['--check', '--strict', path.basename(r.driverChecksum)], { cwd: r.dir });
    // And the check can fail: a copy with one byte changed does not pass.
    const dir = path.join(tmp.dir, 'tampered');
    fs.mkdirSync(dir);
    fs.copyFileSync(r.driverChecksum, path.join(dir, path.basename(r.driverChecksum)));
    const bytes = fs.readFileSync(r.driverTarball);
    const at = bytes.length - 100;
    bytes[at] = (bytes[at] ?? 0) ^ 0xff;
    fs.writeFileSync(path.join(dir, path.basename(r.driverTarball)), bytes);
    await assert.rejects(
      exec('sha256sum', ['--check', '--strict', path.basename(r.driverChecksum)], { cwd: dir }),
    );
  });

  it('holds exactly the executable docker-machine-driver-harvester at its root, reproducibly packed', async () => {
    const entries = await tarList(r.driverTarball, '-z', '--full-time');
    assert.equal(entries.length, 1, entries.join('\n'));
    const [mode, owner, , date, time, name] = (entries[0] ?? '').split(/\s+/);
    assert.equal(mode, '-rwxr-xr-x');
    assert.equal(owner, '0/0');
    assert.equal(name, 'docker-machine-driver-harvester');
    assert.equal(
      new Date(`${date}T${time}Z`).getTime() / 1000,
      r.sourceDateEpoch,
      'mtime is SOURCE_DATE_EPOCH',
    );
    // gzip -n: no name and no time stamp in the gzip header.
    const header = fs.readFileSync(r.driverTarball).subarray(0, 10);
    assert.equal((header[3] ?? 0) & 0x08, 0, 'no file name');
    assert.equal(header.readUInt32LE(4), 0, 'no mtime');
  });

  it('the executable in it answers the plugin handshake with no Node on PATH, and is the laptop executable', async () => {
    await exec('tar', ['-xzf', r.driverTarball, '-C', tmp.dir]);
    const exe = path.join(tmp.dir, 'docker-machine-driver-harvester');
    assert.deepEqual(
      fs.readFileSync(exe),
      fs.readFileSync(r.executable),
      'harvester-machine-linux-amd64 is the same file',
    );
    const plugin = await startPlugin(exe, ['rancher-machine', 'create', '-d', 'harvester', 'm1'], {
      ...BARE_ENV,
      ...PLUGIN_ENV,
    });
    try {
      const client = await RpcTestClient.dial(plugin.address, driverRegistry());
      assert.deepEqual(await client.call('RPCServerDriver.GetVersion', goInt), { reply: 1 });
      assert.deepEqual(await client.call('RPCServerDriver.DriverName', goString), { reply: 'harvester' });
      await client.call('RPCServerDriver.Close', goEmptyStruct).catch(() => undefined);
      assert.deepEqual(await plugin.exited, [0, null]);
      await client.closed;
    } finally {
      plugin.child.kill('SIGKILL');
    }
  });

  it('harvester-machine-linux-amd64 --version prints the version (the CLI: the same file under another name)', async () => {
    const { stdout } = await exec(r.executable, ['--version'], { env: BARE_ENV });
    assert.match(stdout, new RegExp(`^harvester-machine ${r.version.replaceAll('.', '\\.')} \\(`));
  });

  it('the image: FROM scratch, the executable without its payload and that payload unpacked, a CA bundle, /tmp; user 65532; labels; at most 40 MiB', async () => {
    assert.ok(fs.statSync(r.image).size <= 40 * 1_048_576, `${fs.statSync(r.image).size} bytes`);
    const index = JSON.parse(await tarRead(r.image, './index.json')) as {
      manifests: Array<{ digest: string; annotations?: Record<string, string> }>;
    };
    assert.equal(index.manifests.length, 1);
    assert.equal(
      index.manifests[0]?.annotations?.['org.opencontainers.image.ref.name'],
      `harvester-machine/controller:${r.version}`,
    );
    const blob = (digest: string): Promise<string> => tarRead(r.image, `./blobs/sha256/${digest.slice(7)}`);
    const manifest = JSON.parse(await blob(index.manifests[0]?.digest ?? '')) as {
      config: { digest: string };
      layers: Array<{ digest: string; mediaType: string }>;
    };
    assert.equal(manifest.layers.length, 1, 'one layer, no base image');
    assert.equal(manifest.layers[0]?.mediaType, 'application/vnd.oci.image.layer.v1.tar+zstd');
    const config = JSON.parse(await blob(manifest.config.digest)) as {
      created: string;
      config: { User: string; Entrypoint: string[]; Env: string[]; Labels: Record<string, string> };
    };
    assert.equal(config.config.User, '65532:65532');
    assert.deepEqual(config.config.Entrypoint, ['/usr/local/bin/harvester-machine', 'controller']);
    assert.ok(config.config.Env.includes(`XDG_CACHE_HOME=${IMAGE_CACHE}`), config.config.Env.join(' '));
    for (const [k, v] of Object.entries(CONTROLLER_IMAGE_ENV))
      assert.ok(config.config.Env.includes(`${k}=${v}`), `${k}=${v} in ${config.config.Env.join(' ')}`);
    const created = new Date(r.sourceDateEpoch * 1000).toISOString().replace('.000Z', 'Z');
    assert.equal(config.created, created);
    const labels = config.config.Labels;
    assert.equal(labels['org.opencontainers.image.version'], r.version);
    assert.equal(labels['org.opencontainers.image.revision'], r.revision);
    assert.equal(labels['org.opencontainers.image.licenses'], 'Apache-2.0');
    assert.equal(labels['org.opencontainers.image.created'], created);
    const pkg = JSON.parse(fs.readFileSync(path.join(repoRoot(), 'package.json'), 'utf8')) as {
      repository: { url: string };
    };
    assert.match(labels['org.opencontainers.image.source'] ?? '', /^https:\/\/\S+$/);
    assert.equal(labels['org.opencontainers.image.source'], pkg.repository.url);

    const layer = path.join(tmp.dir, 'layer.tar.zst');
    fs.writeFileSync(
      layer,
      await exec('tar', ['-xOf', r.image, `./blobs/sha256/${manifest.layers[0]?.digest.slice(7)}`], {
        encoding: 'buffer',
        maxBuffer: 1 << 30,
      }).then((o) => o.stdout),
    );
    const listing = await tarList(layer, '--zstd');
    const files = listing.filter((l) => !l.startsWith('d')).map((l) => l.split(/\s+/).slice(5).join(' '));
    assert.ok(
      listing.every((l) => l.split(/\s+/)[1] === '0/0'),
      'every file owned by root: the user 65532 cannot change them',
    );
    const root = path.join(tmp.dir, 'rootfs');
    fs.mkdirSync(root);
    await exec('tar', ['--zstd', '-xf', layer, '-C', root]);
    const exe = path.join(root, 'usr/local/bin/harvester-machine');
    // The release executable's launcher, without the payload's bytes: its index and trailer follow.
    const [detached, full] = [fs.readFileSync(exe), fs.readFileSync(r.executable)];
    assert.ok(detached.length < 8 * 1_048_576, `${detached.length} bytes`);
    const launcherBytes = detached.length - 16 - Number(detached.readBigUInt64LE(detached.length - 16));
    assert.ok(
      detached.subarray(0, launcherBytes).equals(full.subarray(0, launcherBytes)),
      'the same launcher',
    );
    assert.equal(detached.subarray(-8).toString(), 'HMPAYLD1');
    // Static: no loader and no libc beside it.
    const ldd = await exec('ldd', [exe]).then(
      (o) => o.stdout + o.stderr,
      (err: { stdout: string; stderr: string }) => err.stdout + err.stderr,
    );
    assert.match(ldd, /not a dynamic executable|statically linked/);
    // Its payload unpacked exactly as the executable unpacks it into an empty cache.
    const fresh = path.join(tmp.dir, 'fresh-cache');
    fs.mkdirSync(fresh);
    await exec(r.executable, ['--version'], { env: { ...BARE_ENV, XDG_CACHE_HOME: fresh } });
    const unpacked = `${IMAGE_CACHE.slice(1)}/harvester-machine/unpacked/`;
    const expectedPayload = listTree(path.join(fresh, 'harvester-machine/unpacked'));
    assert.deepEqual(
      expectedPayload
        .map((f) => f.split('/')[0]?.replace(/-[0-9a-f]{20}$/, ''))
        .filter((v, i, a) => a.indexOf(v) === i),
      ['app', 'runtime'],
    );
    for (const f of expectedPayload)
      assert.ok(
        fs
          .readFileSync(path.join(root, unpacked, f))
          .equals(fs.readFileSync(path.join(fresh, 'harvester-machine/unpacked', f))),
        `${unpacked}${f} holds what the executable unpacks`,
      );
    const expected = [
      'etc/group',
      'etc/passwd',
      'etc/ssl/certs/ca-certificates.crt',
      'usr/local/bin/harvester-machine',
      'usr/share/harvester-machine/ca-bundle.txt',
      ...expectedPayload.map((f) => `${unpacked}${f}`),
    ].sort();
    assert.deepEqual(files.sort(), expected);
    const manifestFile = expectedPayload.find((f) => /^runtime-[0-9a-f]{20}\/MANIFEST$/.test(f)) ?? '';
    const runtimeManifest = fs.readFileSync(path.join(root, unpacked, manifestFile), 'utf8');
    assert.match(runtimeManifest, /^node 24\./);
    assert.match(
      runtimeManifest,
      /^libc\.so\.6 libc6:amd64 /m,
      'the libraries named with their Debian packages',
    );
    // The image's executable runs from that payload, as the full one does, and writes nothing.
    const imageCache = path.join(root, IMAGE_CACHE.slice(1));
    const before = listTree(imageCache);
    const version = (await exec(r.executable, ['--version'], { env: { ...BARE_ENV, XDG_CACHE_HOME: fresh } }))
      .stdout;
    assert.equal(
      (await exec(exe, ['--version'], { env: { ...BARE_ENV, XDG_CACHE_HOME: imageCache } })).stdout,
      version,
    );
    assert.deepEqual(listTree(imageCache), before);
    const tmpEntry = listing.find((l) => / tmp\/?$/.test(l));
    assert.match(tmpEntry ?? '', /^drwxrwxrwt 0\/0/, '/tmp is the writable directory (1777)');
    assert.match(
      fs.readFileSync(path.join(root, 'etc/ssl/certs/ca-certificates.crt'), 'utf8'),
      /BEGIN CERTIFICATE/,
    );
  });

  it('the image’s executable runs only a verified payload: none, or one that lost a byte, is refused and nothing is written', async () => {
    const root = path.join(tmp.dir, 'detached');
    fs.mkdirSync(root);
    const layer = path.join(tmp.dir, 'layer.tar.zst');
    await exec('tar', ['--zstd', '-xf', layer, '-C', root]);
    const exe = path.join(root, 'usr/local/bin/harvester-machine');
    const empty = path.join(tmp.dir, 'empty-cache');
    fs.mkdirSync(empty);
    const refused = async (cache: string) =>
      exec(exe, ['--version'], { env: { ...BARE_ENV, XDG_CACHE_HOME: cache } }).then(
        () => assert.fail('it ran'),
        (err: { code?: number; stderr?: string }) => err,
      );
    const none = await refused(empty);
    assert.equal(none.code, 126);
    assert.match(none.stderr ?? '', /carries no payload .* found no unpacked, verified runtime/);
    assert.deepEqual(listTree(empty), [], 'nothing unpacked, nothing written');
    // A part that lost a byte after the build fails its completion marker's check.
    const cache = path.join(root, IMAGE_CACHE.slice(1));
    const unpacked = path.join(cache, 'harvester-machine/unpacked');
    const app = fs.readdirSync(unpacked).find((d) => d.startsWith('app-')) ?? '';
    const bundle = path.join(unpacked, app, 'app.cjs');
    fs.chmodSync(bundle, 0o644);
    fs.truncateSync(bundle, fs.statSync(bundle).size - 1);
    fs.chmodSync(bundle, 0o444);
    const damaged = await refused(cache);
    assert.equal(damaged.code, 126);
    assert.match(damaged.stderr ?? '', /app\.cjs is not the file that was unpacked/);
  });

  it('the image starts its controller under podman and writes nothing to its file system', async () => {
    const id = await loadImage(r.image);
    /** `podman diff` after a run with a writable container layer (no --read-only): what a start wrote. */
    const written = async (
      env: string[],
      copyIn?: string,
    ): Promise<{ output: string; changes: string[] }> => {
      const name = `hm-release-nowrite-${process.pid}-${copyIn ? 'copy' : 'run'}`;
      try {
        // No higher limits than the current ones (podman.ts: no CAP_SYS_RESOURCE to raise them).
        const output = await podman([
          'run',
          ...['--name', name, '--network', 'none'],
          ...['--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=4096:4096'],
          ...env.flatMap((e) => ['--env', e]),
          id,
          '--help',
        ]);
        if (copyIn) {
          fs.writeFileSync(copyIn, 'x');
          await podman(['cp', copyIn, `${name}:/tmp/marker`]);
        }
        // podman's own mount points for /etc/hosts, /etc/hostname, /etc/resolv.conf.
        const changes = (await podman(['diff', name]))
          .split('\n')
          .filter((l) => l !== '' && !/^[AC] \/etc(\/(hosts|hostname|resolv\.conf))?$/.test(l));
        return { output, changes };
      } finally {
        await podman(['rm', '--force', '--time', '0', name]).catch(() => undefined);
      }
    };
    const run = await written([]);
    assert.match(run.output, /^Usage: harvester-machine controller \[options\]/);
    assert.deepEqual(run.changes, [], 'nothing written: the payload was found unpacked');
    // And the check can fail: a file put into the container shows in its diff.
    const marked = await written([], path.join(tmp.dir, 'marker'));
    assert.ok(marked.changes.includes('A /tmp/marker'), marked.changes.join('\n'));
  });

  it('skopeo reads the image archive (as `skopeo copy oci-archive:… docker://…` does) and keeps its digest', async () => {
    const index = JSON.parse(await tarRead(r.image, './index.json')) as {
      manifests: Array<{ digest: string }>;
    };
    const inspect = JSON.parse(
      (await exec('skopeo', ['inspect', `oci-archive:${r.image}`], { maxBuffer: 1 << 24 })).stdout,
    ) as { Digest: string; Labels: Record<string, string> };
    assert.equal(inspect.Digest, index.manifests[0]?.digest);
    assert.equal(inspect.Labels['org.opencontainers.image.version'], r.version);
    const layout = path.join(tmp.dir, 'copied');
    await exec('skopeo', ['copy', '--quiet', `oci-archive:${r.image}`, `oci:${layout}:${r.version}`]);
    const copied = JSON.parse(fs.readFileSync(path.join(layout, 'index.json'), 'utf8')) as {
      manifests: Array<{ digest: string }>;
    };
    assert.equal(copied.manifests[0]?.digest, index.manifests[0]?.digest, 'copied without a change');
  });

  it('the packaged chart is the release version, its image that archive', async () => {
    const chartYaml = parse(await tarRead(r.chart, 'harvester-machine-controller/Chart.yaml')) as Record<
      string,
      string
    >;
    assert.equal(chartYaml.version, r.version);
    assert.equal(chartYaml.appVersion, r.version);
    const values = parse(await tarRead(r.chart, 'harvester-machine-controller/values.yaml')) as {
      image: { repository: string; tag: string; digest: string };
    };
    assert.equal(values.image.repository, 'harvester-machine/controller');
    assert.equal(values.image.tag || chartYaml.appVersion, r.version);
    const entries = await tarList(r.chart, '-z', '--full-time');
    assert.ok(
      entries.every((e) => e.includes(' 0/0 ')),
      'fixed owners',
    );
  });
});
