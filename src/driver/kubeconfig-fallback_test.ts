// Without kubeconfig content the driver falls back as the Go driver does, by client-go's
// rules from src/kube: a $KUBECONFIG list is merged (a missing file skipped), else ~/.kube/config.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { rancherKubeconfig } from '../kube/testing/kubeconfig.js';
import { HarvesterDriver } from './harvester-driver.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-driver-fallback-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

function driverWith(env: Record<string, string>): HarvesterDriver {
  const driver = new HarvesterDriver({
    env: { HOME: dir, ...env },
    clientOptions: { retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 }, requestTimeoutMs: 5_000 },
  });
  driver.setConfigRaw(Buffer.from(JSON.stringify({ MachineName: 'm1', VMNamespace: 'default' })));
  return driver;
}

async function failure(driver: HarvesterDriver): Promise<Error> {
  try {
    await driver.getState();
  } catch (err) {
    return err as Error;
  } finally {
    driver.close();
  }
  assert.fail('expected the operation to fail');
}

describe('the driver without kubeconfig content', () => {
  it('merges the $KUBECONFIG list, skipping a missing file', async () => {
    const file = path.join(dir, 'harvester.yaml');
    // Port 1 on loopback: nothing listens, so the error names the server the merged config chose.
    fs.writeFileSync(file, rancherKubeconfig({ server: 'https://127.0.0.1:1' }));
    const err = await failure(
      driverWith({ KUBECONFIG: [path.join(dir, 'absent.yaml'), file].join(path.delimiter) }),
    );
    assert.match(err.message, /cannot reach https:\/\/127\.0\.0\.1:1/);
  });

  it('says where it looked when there is no kubeconfig at all', async () => {
    const err = (await failure(driverWith({ KUBECONFIG: path.join(dir, 'absent.yaml') }))) as Error & {
      problems?: Array<{ message: string }>;
    };
    assert.match(
      err.problems?.[0]?.message ?? err.message,
      /--harvester-kubeconfig-content: no kubeconfig for the Harvester cluster .*: no kubeconfig: \S*absent\.yaml not found, and not in a cluster/,
    );
  });
});
