// The Informer against a scripted server, like client-node's cache tests: the first list
// fills the cache, a watch resumes from the last resourceVersion seen, 410 relists and the
// handlers see the difference, failures back off, a watch that ends at once without events
// is paced instead of re-opened thousands of times a second, and an error answer that never
// ends cannot freeze it.
import assert from 'node:assert/strict';
import type http from 'node:http';
import { beforeEach, describe, it } from 'node:test';
import { Informer, type InformerEvent, type InformerOptions } from './informer.js';
import { Resources, type KubeObject } from './resources.js';
import {
  useScriptedServer,
  answerJson,
  secret,
  secretList,
  status,
  watchLine,
  type ScriptedRequest,
} from './testing.js';
import { createLogger } from '../log/logger.js';

let script: (req: ScriptedRequest, res: http.ServerResponse) => void = () => undefined;
const scripted = useScriptedServer((req, res) => script(req, res));
const informers: Array<Informer<KubeObject>> = [];
beforeEach(async () => {
  for (const i of informers.splice(0)) await i.stop();
  scripted.server.requests.length = 0;
});

function informer(options: InformerOptions = {}): { informer: Informer<KubeObject>; seen: string[] } {
  const i = new Informer<KubeObject>(scripted.client, Resources.secret, { namespace: 'default', ...options });
  const seen: string[] = [];
  i.on((e: InformerEvent<KubeObject>) => seen.push(`${e.type} ${e.object.metadata.name}`));
  informers.push(i);
  return { informer: i, seen };
}

const isWatch = (r: ScriptedRequest): boolean => r.query.get('watch') === '1';
const isList = (r: ScriptedRequest): boolean => !isWatch(r);
const hang = (res: http.ServerResponse): void => {
  res.writeHead(200, { 'Content-Type': 'application/json' });
  res.write('\n');
};
const stream = (res: http.ServerResponse, ...lines: string[]): void => {
  res.writeHead(200, { 'Content-Type': 'application/json' });
  res.end(lines.join(''));
};

describe('Informer', () => {
  it('resumes a watch that ended from the last resourceVersion it saw, without listing', async () => {
    let watches = 0;
    script = (req, res) => {
      if (isList(req)) return answerJson(res, 200, secretList('10', [secret('a', '10')]));
      watches++;
      if (watches === 1)
        return stream(res, watchLine('ADDED', secret('b', '11')), watchLine('BOOKMARK', secret('', '12')));
      hang(res);
    };
    const { informer: i, seen } = informer();
    await i.start();
    await scripted.server.arrival(2, isWatch, 'the second watch');
    assert.deepEqual(seen, ['ADDED a', 'ADDED b']);
    assert.equal(scripted.server.watches()[1]?.query.get('resourceVersion'), '12');
    assert.equal(scripted.server.lists().length, 1);
    assert.deepEqual(
      i
        .list()
        .map((o) => o.metadata.name)
        .sort(),
      ['a', 'b'],
    );
  });

  it('relists after 410 Gone and tells the handlers what changed meanwhile', async () => {
    let lists = 0;
    script = (req, res) => {
      if (isList(req)) {
        lists++;
        return answerJson(
          res,
          200,
          lists === 1
            ? secretList('10', [secret('a', '10'), secret('b', '10')])
            : secretList('20', [secret('b', '19'), secret('c', '20')]),
        );
      }
      if (req.query.get('resourceVersion') === '10') {
        return stream(res, watchLine('ERROR', status(410, 'Expired', 'too old resource version: 10 (15)')));
      }
      hang(res);
    };
    const { informer: i, seen } = informer();
    await i.start();
    await scripted.server.arrival(2, isWatch, 'the watch after the relist');
    assert.deepEqual(seen, ['ADDED a', 'ADDED b', 'MODIFIED b', 'ADDED c', 'DELETED a']);
    assert.equal(scripted.server.watches()[1]?.query.get('resourceVersion'), '20');
    assert.equal(i.get('default/b')?.metadata.resourceVersion, '19');
  });

  it('resumes at once after a short watch that delivered events', async () => {
    let watches = 0;
    script = (req, res) => {
      if (isList(req)) return answerJson(res, 200, secretList('10', []));
      watches++;
      if (watches <= 5) return stream(res, watchLine('ADDED', secret(`s${watches}`, String(10 + watches))));
      hang(res);
    };
    // A backoff this long would hold the next watch for minutes.
    const { informer: i, seen } = informer({ backoff: { initialMs: 600_000, maxMs: 600_000 } });
    await i.start();
    await scripted.server.arrival(6, isWatch, 'six watches, each resumed at once');
    assert.deepEqual(seen, ['ADDED s1', 'ADDED s2', 'ADDED s3', 'ADDED s4', 'ADDED s5']);
    assert.deepEqual(
      scripted.server.watches().map((r) => r.query.get('resourceVersion')),
      ['10', '11', '12', '13', '14', '15'],
    );
  });

  it('paces watches that end at once without events: at most 10 requests in 2 s', async () => {
    script = (req, res) => (isList(req) ? answerJson(res, 200, secretList('10', [])) : stream(res));
    const { informer: i } = informer();
    await i.start();
    const started = performance.now();
    await new Promise((r) => setTimeout(r, 2_000)); // the measurement window itself
    const inWindow = scripted.server.requests.filter((r) => r.at - started <= 2_000).length;
    assert.ok(inWindow <= 10, `${inWindow} requests in 2 s`);
    assert.ok(scripted.server.watches().length >= 2, 'it did try again');
    assert.equal(scripted.server.lists().length, 1, 'an empty watch is resumed, not relisted');
  });

  it('backs off exponentially while watches fail, relisting after each', async () => {
    script = (req, res) =>
      isList(req)
        ? answerJson(res, 200, secretList('10', []))
        : answerJson(res, 503, status(503, 'ServiceUnavailable', 'x'));
    const { informer: i } = informer({ backoff: { initialMs: 100, maxMs: 400 } });
    await i.start();
    await scripted.server.arrival(6, isWatch, 'six failed watches');
    const at = scripted.server.watches().map((r) => r.at);
    const gaps = at.slice(1).map((t, n) => t - (at[n] ?? t));
    // Pauses are jittered down to half: 50-100, 100-200, 200-400, then capped at 200-400 ms.
    const floors = [45, 95, 195, 195, 195];
    gaps.forEach((g, n) =>
      assert.ok(
        g >= (floors[n] ?? 0),
        `gap ${n + 1}: ${g.toFixed(0)} ms (${gaps.map(Math.round).join(', ')})`,
      ),
    );
    assert.equal(scripted.server.lists().length, 6, 'a failed watch is followed by a list');
  });

  it('an error answer whose body never ends does not freeze it: it relists within a bound', async () => {
    script = (req, res) => {
      if (isList(req)) return answerJson(res, 200, secretList('10', []));
      res.writeHead(500, { 'Content-Type': 'application/json' });
      res.write('{"kind":"Status",'); // and never more
    };
    const { informer: i } = informer({ idleTimeoutMs: 300 });
    await i.start();
    const started = performance.now();
    // The body is given 300 ms, then a pause of at most 500 ms: well within 5 s.
    const relisted = await scripted.server.arrival(
      2,
      isList,
      'a relist after the stalled error answer',
      5_000,
    );
    assert.ok(relisted - started >= 290, 'the error answer was given the idle timeout');
  });

  it('stops at once, also while it backs off', async () => {
    script = (req, res) => (isList(req) ? answerJson(res, 200, secretList('10', [])) : stream(res));
    let backingOff!: () => void;
    const pausing = new Promise<void>((r) => (backingOff = r));
    const logger = createLogger({
      level: 'warn',
      sink: { write: (_level, line) => line.includes('backing off') && backingOff() },
    });
    const { informer: i } = informer({ backoff: { initialMs: 600_000, maxMs: 600_000 }, logger });
    await i.start();
    await pausing; // a pause of minutes has begun
    const started = performance.now();
    await i.stop();
    assert.ok(performance.now() - started < 2_000);
    assert.equal(
      scripted.server.watches().length,
      2,
      'the first short watch was re-opened at once, the second paused',
    );
  });

  it('tells its caller of each failed list or watch with the pause before the next, and of each list', async () => {
    let down = false;
    let failures = 0;
    script = (req, res) =>
      isWatch(req) || down
        ? answerJson(res, 503, status(503, 'ServiceUnavailable', 'down'))
        : answerJson(res, 200, secretList('10', []));
    const seen: string[] = [];
    let relisted!: () => void;
    const back = new Promise<void>((r) => (relisted = r));
    const { informer: i } = informer({
      backoff: { initialMs: 40, maxMs: 40 },
      onFailure: (err, pauseMs) => {
        seen.push(
          `failed ${/503|down/.test(err.message) ? 'down' : err.message} ${pauseMs > 0 ? 'paused' : 'at once'}`,
        );
        failures++;
        if (failures === 1) down = true; // after the first failed watch, lists fail too
        if (failures === 3) down = false;
      },
      onListed: () => {
        seen.push('listed');
        if (seen.length > 1) relisted();
      },
    });
    await i.start();
    await back;
    await i.stop();
    assert.deepEqual(seen.slice(0, 5), [
      'listed',
      'failed down paused',
      'failed down paused',
      'failed down paused',
      'listed',
    ]);
  });

  it('a first list refused for good fails start()', async () => {
    script = (_req, res) => answerJson(res, 403, status(403, 'Forbidden', 'User "u" cannot list secrets'));
    const i = new Informer<KubeObject>(scripted.server.client(), Resources.secret, { namespace: 'default' });
    informers.push(i);
    await assert.rejects(i.start(), /cannot list secrets/);
  });
});
