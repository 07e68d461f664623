import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { GO_CONFIG_JSON } from '../../harvester/testing/fixtures.js';
import { MachineNotFoundError, UsageError } from '../errors.js';
import { driverConfigRaw, parseHostConfig } from './host-config.js';
import { MachineStore, storeRoot } from './machine-store.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-store-unit-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));
const mode = (p: string): number => fs.statSync(p).mode & 0o777;

describe('machine store', () => {
  it('finds its root: --store, $HARVESTER_MACHINE_STORE, $XDG_DATA_HOME, ~/.local/share', () => {
    assert.equal(storeRoot('/a', { HARVESTER_MACHINE_STORE: '/b' }), '/a');
    assert.equal(storeRoot(undefined, { HARVESTER_MACHINE_STORE: '/b', XDG_DATA_HOME: '/x' }), '/b');
    assert.equal(storeRoot(undefined, { XDG_DATA_HOME: '/x' }), '/x/harvester-machine');
    assert.equal(
      storeRoot(undefined, { XDG_DATA_HOME: 'relative' }, '/home/u'),
      '/home/u/.local/share/harvester-machine',
    );
    assert.equal(storeRoot(undefined, {}, '/home/u'), '/home/u/.local/share/harvester-machine');
  });

  it('saves config.json atomically as rancher-machine writes it, 0600 in a 0700 directory', async () => {
    const store = new MachineStore(path.join(tmp, 'store'));
    const dir = await store.create('mycluster-pool1-7f8d9c5b6-x2v9q');
    fs.writeFileSync(path.join(dir, 'id_rsa.pub'), 'ssh-rsa AAAA\n', { mode: 0o644 });
    await store.save('mycluster-pool1-7f8d9c5b6-x2v9q', Buffer.from(GO_CONFIG_JSON));
    assert.equal(mode(store.root), 0o700);
    assert.equal(mode(store.machinesDir), 0o700);
    assert.equal(mode(dir), 0o700);
    assert.deepEqual(fs.readdirSync(dir).sort(), ['config.json', 'id_rsa.pub'], 'no temp file left');
    for (const f of fs.readdirSync(dir)) assert.equal(mode(path.join(dir, f)), 0o600, f);

    const loaded = await store.load('mycluster-pool1-7f8d9c5b6-x2v9q');
    assert.equal(loaded.host.ConfigVersion, 3);
    assert.equal(loaded.host.DriverName, 'harvester');
    assert.equal(loaded.host.Name, 'mycluster-pool1-7f8d9c5b6-x2v9q');
    assert.deepEqual(Object.keys(loaded.host), [
      'ConfigVersion',
      'Driver',
      'DriverName',
      'HostOptions',
      'Name',
    ]);
    const driver = JSON.parse(Buffer.from(driverConfigRaw(loaded.host)).toString()) as Record<
      string,
      unknown
    >;
    assert.equal(driver['MachineName'], 'mycluster-pool1-7f8d9c5b6-x2v9q');
    assert.deepEqual(await store.list(), ['mycluster-pool1-7f8d9c5b6-x2v9q']);

    await assert.rejects(store.create('mycluster-pool1-7f8d9c5b6-x2v9q'), UsageError);
    await store.remove('mycluster-pool1-7f8d9c5b6-x2v9q');
    await assert.rejects(store.load('mycluster-pool1-7f8d9c5b6-x2v9q'), MachineNotFoundError);
  });

  it('refuses names that are no VM names (and could escape the store)', async () => {
    const store = new MachineStore(path.join(tmp, 'store2'));
    for (const bad of ['../etc', 'UPPER', 'a/b', '-lead', ''])
      await assert.rejects(store.create(bad), UsageError, bad);
  });

  it('refuses a config.json of another driver', () => {
    assert.throws(
      () =>
        parseHostConfig(
          JSON.stringify({ ConfigVersion: 3, Driver: {}, DriverName: 'amazonec2', Name: 'm' }),
          '/s/config.json',
        ),
      /\/s\/config.json belongs to driver "amazonec2"/,
    );
  });
});
