// The shared sandbox of test/shared-sandbox/: one start for every useSandbox() of the process,
// started before the first test and stopped after the last, whatever describe asked for it.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { Sandbox } from '../../sandbox/sandbox.js';
import { shareOneSandbox, useSandbox } from './sandbox-fixture.js';

const events: string[] = [];
shareOneSandbox((options) => {
  events.push(`start ${JSON.stringify(options)}`);
  return Promise.resolve({
    clusterId: 'c-fake',
    stop: () => {
      events.push('stop');
      return Promise.resolve();
    },
  } as unknown as Sandbox);
});
const first = useSandbox();

describe('a member file asking inside its describe', () => {
  const second = useSandbox();
  it('gets the one sandbox, started once', () => {
    assert.equal(second, first);
    assert.equal(second.sandbox.clusterId, 'c-fake');
    assert.deepEqual(events, ['start {}']);
  });
});

describe('a second member', () => {
  it('finds it still running: the first suite did not stop it', () => {
    assert.equal(useSandbox().sandbox.clusterId, 'c-fake');
    assert.deepEqual(events, ['start {}']);
  });

  it('is refused options of its own, by name', () => {
    assert.throws(
      () => useSandbox({ kubevirt: true } as never),
      /asked for its own options \(kubevirt\): run it by itself/,
    );
    assert.throws(() => shareOneSandbox(), /shares one sandbox already/);
  });
});

after(() => {
  // Root hooks run in order: the sandbox's stop (registered first) has run by now.
  assert.deepEqual(events, ['start {}', 'stop']);
});
