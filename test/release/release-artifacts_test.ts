// What `npm run release` writes (scripts/release.sh, run on the cached executables): the
// node driver tarball as Rancher's NodeDriver URL expects it, its checksum file, the
// executable in it answering rancher-machine's plugin handshake, the controller image's
// contents and labels, and the packaged chart pointing at that image.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { driverRegistry } from '../../src/plugin/driver-types.js';
import { goEmptyStruct, goInt, goString } from '../../src/plugin/gob/go-types.js';
import { NOT_A_PLUGIN_MESSAGE } from '../../src/plugin/plugin-main.js';
import { RpcTestClient } from '../../src/plugin/testing/rpc-test-client.js';
import { releaseArtifacts, type ReleaseArtifacts } from '../../sandbox/release/artifacts.js';
import { PLUGIN_ENV, startPlugin } from '../interop/support/plugin-process.js';
import { tempRoot } from '../interop/support/repo.js';

const exec = promisify(execFile);
const tmp = tempRoot('hm-release');
const BARE_ENV = { PATH: '/nonexistent', HOME: '/nonexistent' };

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

  it('harvester-machine-linux-amd64 --version prints the version', async (t) => {
    const answer = await exec(r.executable, ['--version'], { env: BARE_ENV }).catch(
      (err: { stdout: string; stderr: string }) => err,
    );
    if (answer.stderr === NOT_A_PLUGIN_MESSAGE) {
      // Before one executable serves every role the release executable is the plugin only.
      t.skip('the release executable is still the plugin only (no CLI role yet)');
      return;
    }
    assert.equal(answer.stdout.trim(), r.version);
  });

  it('the image: FROM scratch with the executable, exactly the libraries it links, a CA bundle, /tmp; user 65532; labels', async () => {
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
    const config = JSON.parse(await blob(manifest.config.digest)) as {
      created: string;
      config: { User: string; Entrypoint: string[]; Labels: Record<string, string> };
    };
    assert.equal(config.config.User, '65532:65532');
    assert.deepEqual(config.config.Entrypoint, ['/usr/local/bin/harvester-machine', 'controller']);
    const created = new Date(r.sourceDateEpoch * 1000).toISOString().replace('.000Z', 'Z');
    assert.equal(config.created, created);
    const labels = config.config.Labels;
    assert.equal(labels['org.opencontainers.image.version'], r.version);
    assert.equal(labels['org.opencontainers.image.revision'], r.revision);
    assert.equal(labels['org.opencontainers.image.licenses'], 'Apache-2.0');
    assert.equal(labels['org.opencontainers.image.created'], created);
    assert.ok('org.opencontainers.image.source' in labels);

    const layer = path.join(tmp.dir, 'layer.tar.gz');
    fs.writeFileSync(
      layer,
      await exec('tar', ['-xOf', r.image, `./blobs/sha256/${manifest.layers[0]?.digest.slice(7)}`], {
        encoding: 'buffer',
        maxBuffer: 1 << 30,
      }).then((o) => o.stdout),
    );
    const files = (await tarList(layer, '-z'))
      .filter((l) => !l.startsWith('d'))
      .map((l) => l.split(/\s+/).slice(5).join(' '));
    const root = path.join(tmp.dir, 'rootfs');
    fs.mkdirSync(root);
    await exec('tar', ['-xzf', layer, '-C', root]);
    // Exactly what ldd says the executable links (or nothing when it is static), each listed.
    const exe = path.join(root, 'usr/local/bin/harvester-machine');
    const ldd = await exec('ldd', [exe]).then(
      (o) => o.stdout,
      (err: { stdout: string }) => err.stdout,
    );
    const linked = [...ldd.matchAll(/(\/\S+) \(0x[0-9a-f]+\)/g)].map((m) => (m[1] ?? '').slice(1)).sort();
    const listed = fs
      .readFileSync(path.join(root, 'usr/share/harvester-machine/shared-libraries.txt'), 'utf8')
      .trim()
      .split('\n');
    const expected = [
      'etc/group',
      'etc/passwd',
      'etc/ssl/certs/ca-certificates.crt',
      'usr/local/bin/harvester-machine',
      'usr/share/harvester-machine/ca-bundle.txt',
      'usr/share/harvester-machine/shared-libraries.txt',
      ...linked,
    ].sort();
    assert.deepEqual(files.sort(), expected);
    if (linked.length > 0) assert.deepEqual(listed.map((l) => l.split(' ')[0]?.slice(1)).sort(), linked);
    for (const l of listed)
      assert.doesNotMatch(l, /unknown/, `${l}: every library comes from a Debian package`);
    const tmpEntry = (await tarList(layer, '-z')).find((l) => / tmp\/?$/.test(l));
    assert.match(tmpEntry ?? '', /^drwxrwxrwt 0\/0/, '/tmp is the writable directory (1777)');
    assert.match(
      fs.readFileSync(path.join(root, 'etc/ssl/certs/ca-certificates.crt'), 'utf8'),
      /BEGIN CERTIFICATE/,
    );
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
