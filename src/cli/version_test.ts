import assert from 'node:assert/strict';
import fs from 'node:fs';
import { describe, it } from 'node:test';
import { VERSION, versionText } from './version.js';

describe('versionText', () => {
  it("names the package's version, the revision and the Node runtime", () => {
    const pkg = JSON.parse(fs.readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    assert.equal(VERSION, pkg.version);
    assert.equal(
      versionText(),
      `harvester-machine ${pkg.version} (from source, Node.js ${process.versions.node})`,
    );
  });
});
