import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SEED_IMAGE_VIRTUAL_SIZE, qcow2Header, startImageServer, virtualSizeOf } from '../../image-server.js';
import {
  SANDBOX_DISK_UUID,
  download,
  nextFileStep,
  refusedUrl,
  withFile,
  type BackingImage,
} from './backing-images.js';
import { backingImageCreatePatch } from './longhorn-webhook.js';

describe("Longhorn's backing images (stand-in)", () => {
  it('fetches only http on 127.0.0.1, and says why not otherwise', () => {
    assert.equal(refusedUrl('http://127.0.0.1:8080/a.img'), undefined);
    assert.match(
      refusedUrl('http://localhost:8080/a.img') ?? '',
      /host localhost is not the sandbox's image server/,
    );
    assert.match(refusedUrl('https://127.0.0.1/a.img') ?? '', /scheme https: is not served/);
    assert.match(
      refusedUrl('http://images.example.invalid/a.img') ?? '',
      /nothing is downloaded from elsewhere/,
    );
    assert.match(refusedUrl('not a url') ?? '', /does not parse/);
    assert.match(refusedUrl(undefined) ?? '', /no url/);
  });

  it("reads a qcow2 header's virtual size, a raw file's length otherwise", () => {
    assert.equal(virtualSizeOf(qcow2Header(SEED_IMAGE_VIRTUAL_SIZE, 4096), 4096), SEED_IMAGE_VIRTUAL_SIZE);
    assert.equal(virtualSizeOf(Buffer.alloc(512), 10_000), 10_000);
  });

  it("downloads the sandbox server's image: its length, virtual size and SHA-512", async () => {
    const server = await startImageServer();
    try {
      const got = await download(server.seedImageUrl);
      assert.equal(got.virtualSize, SEED_IMAGE_VIRTUAL_SIZE);
      assert.ok(got.size > 0);
      assert.match(got.checksum, /^[0-9a-f]{128}$/);
      await assert.rejects(download(server.seedImageUrl.replace(/[^/]+$/, 'missing.img')), /got 404/);
      await assert.rejects(download(server.seedImageUrl, 100), /larger than 100 bytes/);
    } finally {
      await server.stop();
    }
  });

  it("gives no outcome, ready or failed, before Harvester's image is Initialized (Harvester would ignore it for ever)", () => {
    const bi = (url: string, file?: Parameters<typeof withFile>[1]): BackingImage => ({
      apiVersion: 'longhorn.io/v1beta2',
      kind: 'BackingImage',
      metadata: { name: 'vmi-1', namespace: 'longhorn-system' },
      spec: { sourceType: 'download', sourceParameters: { url } },
      status: { uuid: 'ab12cd34', ...(file ? withFile(undefined, file) : {}) },
    });
    const refused = 'http://localhost:8080/a.img';
    const served = 'http://127.0.0.1:8080/a.img';
    for (const url of [refused, served]) {
      assert.deepEqual(nextFileStep(bi(url, { state: 'pending', progress: 0 }), false), { step: 'wait' });
      assert.deepEqual(nextFileStep(bi(url, { state: 'pending', progress: 0 }), true), { step: 'start' });
    }
    const failing = nextFileStep(bi(refused, { state: 'in-progress', progress: 50 }), true);
    assert.equal(failing.step, 'fail');
    assert.match(
      failing.step === 'fail' ? failing.message : '',
      /host localhost is not the sandbox's image server/,
    );
    assert.deepEqual(nextFileStep(bi(served, { state: 'in-progress', progress: 50 }), true), {
      step: 'download',
      url: served,
    });
    const other = { ...bi(served), spec: { sourceType: 'clone' } };
    assert.deepEqual(nextFileStep(other, false), { step: 'wait' });
    assert.match(JSON.stringify(nextFileStep(other, true)), /source type clone is not played/);
    assert.deepEqual(nextFileStep({ ...bi(served), status: {} }, false), { step: 'own' });
    assert.deepEqual(nextFileStep(bi(refused, { state: 'failed', progress: 0 }), true), { step: 'none' });
  });

  it("keeps the file's transition time while its state stays, and moves it on a new state", () => {
    const first = withFile(undefined, { state: 'in-progress', progress: 10 });
    const file = first.diskFileStatusMap?.[SANDBOX_DISK_UUID];
    assert.equal(file?.state, 'in-progress');
    const stamped = {
      ...first,
      diskFileStatusMap: { [SANDBOX_DISK_UUID]: { ...file, lastStateTransitionTime: 'then' } },
    };
    assert.equal(
      withFile(stamped, { state: 'in-progress', progress: 50 }).diskFileStatusMap?.[SANDBOX_DISK_UUID]
        ?.lastStateTransitionTime,
      'then',
    );
    assert.notEqual(
      withFile(stamped, { state: 'ready', progress: 100 }).diskFileStatusMap?.[SANDBOX_DISK_UUID]
        ?.lastStateTransitionTime,
      'then',
    );
  });

  it("Longhorn's mutator: dataEngine v1 in place of Harvester's empty one, its finalizer, the maps and copies", () => {
    // As Harvester v1.8.0 sends it: dataEngine "" (no omitempty), disks null.
    const ops = backingImageCreatePatch({
      apiVersion: 'longhorn.io/v1beta2',
      kind: 'BackingImage',
      metadata: { name: 'vmi-x', namespace: 'longhorn-system' },
      spec: { dataEngine: '', disks: null, checksum: ' abc ', minNumberOfCopies: 3, sourceType: 'download' },
    });
    assert.deepEqual(ops, [
      { op: 'add', path: '/metadata/finalizers', value: ['longhorn.io'] },
      { op: 'replace', path: '/spec/checksum', value: 'abc' },
      { op: 'replace', path: '/spec/disks', value: {} },
      { op: 'add', path: '/spec/diskFileSpecMap', value: {} },
      { op: 'replace', path: '/spec/dataEngine', value: 'v1' },
    ]);
    const kept = backingImageCreatePatch({
      apiVersion: 'longhorn.io/v1beta2',
      kind: 'BackingImage',
      metadata: { name: 'vmi-y', finalizers: ['longhorn.io'] },
      spec: { dataEngine: 'v2', disks: {}, diskFileSpecMap: {}, minNumberOfCopies: 0 },
    });
    assert.deepEqual(kept, [
      { op: 'add', path: '/spec/checksum', value: '' },
      { op: 'replace', path: '/spec/minNumberOfCopies', value: 1 },
    ]);
  });
});
