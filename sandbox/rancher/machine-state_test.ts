import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { readTar, writeTar } from './machine-state.js';

describe('machine-state tar', () => {
  const long = `home/machine/.docker/machine/machines/${'x'.repeat(63)}/config.json`;
  it('round-trips files, long paths included', () => {
    const files = readTar(writeTar({ [long]: Buffer.from('{"a":1}'), 'b.txt': Buffer.alloc(600, 'b') }));
    assert.equal(files[long]?.toString(), '{"a":1}');
    assert.equal(files['b.txt']?.length, 600);
  });
  it('writes what GNU tar reads', (t) => {
    const tarBin = spawnSync('tar', ['--version']);
    if (tarBin.status !== 0) return t.skip('no tar on this machine');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-tar-'));
    try {
      fs.writeFileSync(path.join(dir, 'a.tar'), writeTar({ [long]: Buffer.from('{"a":1}') }));
      const out = spawnSync('tar', ['-xOf', path.join(dir, 'a.tar'), long], { encoding: 'utf8' });
      assert.equal(out.status, 0, out.stderr);
      assert.equal(out.stdout, '{"a":1}');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
