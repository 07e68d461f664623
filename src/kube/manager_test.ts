// The manager's enqueue sources, runnables and leader-elected run(), without an apiserver (no
// cache is asked for, so no informer is made).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatKey, objectKey, parseKey, type ObjectKey } from '../api/object-key.js';
import { silentLogger } from '../log/logger.js';
import type { KubeClient } from './client.js';
import { Manager, type LeadershipCallbacks, type ManagerOptions } from './manager.js';

const manager = (options: Partial<ManagerOptions> = {}): Manager =>
  new Manager({ client: {} as KubeClient, logger: silentLogger, ...options });

/** A campaign the test decides: `win()` and `lose()` call the manager's callbacks. */
function scriptedElection(log: string[]) {
  let callbacks: LeadershipCallbacks | undefined;
  return {
    factory: (c: LeadershipCallbacks) => {
      callbacks = c;
      return {
        start: () => log.push('election start'),
        stop: () => {
          log.push('election stop');
          return Promise.resolve();
        },
      };
    },
    win: () => callbacks?.started(),
    lose: () => callbacks?.stopped(),
  };
}

const recorder = (log: string[], name: string, leaderOnly: boolean) => ({
  name,
  leaderOnly,
  start: () => void log.push(`${name} start`),
  halt: () => void log.push(`${name} halt`),
  stopping: () => void log.push(`${name} stopping`),
  stop: () => void log.push(`${name} stop`),
});

describe('Manager enqueue sources', () => {
  it('enqueues what is emitted, mapped or as is, and reconciles it once the queues run', async () => {
    const m = manager();
    const seen: string[] = [];
    const keys = m.source('keys');
    const texts = m.source<string>('texts');
    assert.equal(m.source('keys'), keys, 'one source per name');
    m.controller('c', {
      reconcile: (key: ObjectKey) => {
        seen.push(formatKey(key));
        return Promise.resolve();
      },
    })
      .watch(keys)
      .watch(texts, parseKey);
    keys.emit(objectKey('ns', 'a'));
    texts.emit('ns/b');
    assert.deepEqual(seen, [], 'nothing reconciled before start');
    await m.start();
    await m.idle();
    assert.deepEqual(seen.sort(), ['ns/a', 'ns/b']);
    await m.stop();
  });
});

describe('Manager runnables and leader election', () => {
  it('serves before the campaign, starts leader-only work once elected, stops in order', async () => {
    const log: string[] = [];
    const election = scriptedElection(log);
    const changes: boolean[] = [];
    const m = manager({ leaderElection: election.factory, onLeadershipChange: (l) => changes.push(l) });
    m.add(recorder(log, 'server', false));
    m.add(recorder(log, 'writer', true));
    await m.run();
    assert.deepEqual(log, ['server start', 'election start']);
    assert.equal(m.ready, true, 'a standby is ready');
    assert.equal(m.synced, false, 'no cache started before leading');
    election.win();
    await new Promise((r) => setTimeout(r, 10));
    assert.equal(m.leading, true);
    assert.equal(m.synced, true);
    assert.deepEqual(log.slice(2), ['writer start']);
    await m.stop();
    assert.deepEqual(log.slice(3), ['writer stopping', 'writer stop', 'election stop', 'server stop']);
    assert.deepEqual(changes, [true]);
  });

  it('halts the leader-only work when leadership is lost, then calls onLeadershipLost', async () => {
    const log: string[] = [];
    const election = scriptedElection(log);
    let lost = 0;
    const m = manager({ leaderElection: election.factory, onLeadershipLost: () => lost++ });
    m.add(recorder(log, 'writer', true));
    const c = m.controller('c', { reconcile: () => Promise.resolve() });
    await m.run();
    election.win();
    await new Promise((r) => setTimeout(r, 10));
    election.lose();
    assert.equal(lost, 1);
    assert.equal(c.stopped, true, 'the queues stopped');
    assert.equal(m.leading, false);
    assert.deepEqual(log, ['election start', 'writer start', 'writer halt']);
    await m.stop();
  });

  it('does not call onLeadershipLost when leadership ends because it stops, nor stops unstarted leader-only work', async () => {
    const log: string[] = [];
    const election = scriptedElection(log);
    let lost = 0;
    const m = manager({ leaderElection: election.factory, onLeadershipLost: () => lost++ });
    m.add(recorder(log, 'writer', true));
    await m.run();
    const first = m.stop();
    assert.equal(m.stop(), first, 'stop() runs once');
    await first;
    election.lose();
    assert.equal(lost, 0);
    assert.deepEqual(log, ['election start', 'election stop']);
  });

  it('without leader election, leads at once', async () => {
    const log: string[] = [];
    const m = manager();
    m.add(recorder(log, 'writer', true));
    await m.run();
    await new Promise((r) => setTimeout(r, 10));
    assert.equal(m.leading, true);
    assert.deepEqual(log, ['writer start']);
    await m.stop();
  });
});
