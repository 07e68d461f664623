// The Informer against a scripted server, like client-node's cache tests: the first list
// fills the cache, a watch resumes from the last resourceVersion seen, 410 relists and the
// handlers see the difference, failures back off, a watch that ends at once without events
// is paced instead of re-opened thousands of times a second, and an error answer that never
// ends cannot freeze it.
import assert from 'node:assert/strict';
import type http from 'node:http';
import { after, beforeEach, describe, it } from 'node:test';
import { CacheBoundExceeded, Informer, type InformerEvent, type InformerOptions } from './informer.js';
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
after(async () => {
  for (const i of informers.splice(0)) await i.stop();
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

  it('keeps its indexes in step with the cache through watch events and relists', async () => {
    let lists = 0;
    const s = (name: string, rv: string, owner: string) => secret(name, rv, { owner });
    script = (req, res) => {
      if (isList(req)) {
        lists++;
        return answerJson(
          res,
          200,
          lists === 1
            ? secretList('10', [s('a', '10', 'x'), s('b', '10', 'x')])
            : secretList('20', [s('b', '19', 'y'), s('c', '20', 'x')]),
        );
      }
      if (req.query.get('resourceVersion') === '10')
        return stream(
          res,
          watchLine('MODIFIED', s('a', '11', 'y')),
          watchLine('ADDED', s('d', '12', 'x')),
          watchLine('DELETED', s('d', '13', 'x')),
          watchLine('ERROR', status(410, 'Expired', 'too old resource version: 13 (15)')),
        );
      hang(res);
    };
    const { informer: i } = informer();
    i.addIndex('owner', (o) => [(o as unknown as { data: { owner: string } }).data.owner]);
    const names = (owner: string) =>
      i
        .byIndex('owner', owner)
        .map((o) => o.metadata.name)
        .sort();
    await i.start();
    await scripted.server.arrival(2, isWatch, 'the watch after the relist');
    // After the watch: a → y, d added and deleted; after the relist: b → y, a gone, c added.
    assert.deepEqual(names('x'), ['c']);
    assert.deepEqual(names('y'), ['b']);
    assert.deepEqual(names('z'), []);
    assert.throws(() => i.byIndex('nope', 'x'), /no index nope/);
    assert.throws(() => i.addIndex('late', () => []), /after the Secret informer started/);
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

// The bound on what someone else's apiserver can make a cache hold (maxObjects), and the
// transform that drops what is not wanted or not of the shape read later.
describe('Informer with a bound', () => {
  const names = (i: Informer<KubeObject>): string[] =>
    i
      .list()
      .map((o) => o.metadata.name)
      .sort();
  const page = (req: ScriptedRequest, total: number, token: (n: number) => string): unknown => {
    const limit = Number(req.query.get('limit'));
    const from = Number(req.query.get('continue')?.split('-')[1] ?? 0);
    const items = Array.from({ length: Math.min(limit, total - from) }, (_, k) =>
      secret(`s${from + k}`, '5'),
    );
    return {
      ...(secretList('5', items) as object),
      metadata: { resourceVersion: '5', ...(from + limit < total ? { continue: token(from + limit) } : {}) },
    };
  };

  it('fails a list of more objects than the bound, keeping nothing of it; a list within it syncs', async () => {
    let total = 12;
    script = (req, res) =>
      isList(req)
        ? answerJson(
            res,
            200,
            page(req, total, (n) => `at-${n}`),
          )
        : hang(res);
    const over = informer({ maxObjects: 10, pageSize: 4 }).informer;
    await assert.rejects(
      over.start(),
      (err: unknown) => err instanceof CacheBoundExceeded && /more than 10/.test(err.message),
    );
    assert.equal(over.size, 0);
    // Only as many pages as the bound fills, plus the one that went past it.
    assert.equal(scripted.server.lists().length, 3);
    total = 10;
    const within = informer({ maxObjects: 10, pageSize: 4 }).informer;
    await within.start();
    assert.equal(within.size, 10);
  });

  it('ends a list that never ends: the same continue token twice, or more pages than the bound fills', async () => {
    script = (req, res) =>
      isList(req)
        ? answerJson(res, 200, {
            ...(secretList('5', []) as object),
            metadata: { resourceVersion: '5', continue: 'again' },
          })
        : hang(res);
    await assert.rejects(informer({ maxObjects: 10 }).informer.start(), /same continue token twice/);
    let n = 0;
    script = (req, res) =>
      isList(req)
        ? answerJson(res, 200, {
            ...(secretList('5', []) as object),
            metadata: { resourceVersion: '5', continue: `t${n++}` },
          })
        : hang(res);
    scripted.server.requests.length = 0;
    await assert.rejects(informer({ maxObjects: 10, pageSize: 5 }).informer.start(), /past 12 pages/);
    assert.equal(scripted.server.lists().length, 12);
  });

  it('a watch that would add one object past the bound fails; the cache stays at the bound and lists again', async () => {
    let watches = 0;
    script = (req, res) => {
      if (isList(req)) return answerJson(res, 200, secretList('5', [secret('a', '5')]));
      watches++;
      if (watches > 1) return hang(res);
      // Endless in effect: far more new objects than the bound.
      res.writeHead(200, { 'Content-Type': 'application/json' });
      for (let k = 0; k < 200; k++) res.write(watchLine('ADDED', secret(`w${k}`, String(6 + k))));
    };
    const failures: string[] = [];
    const { informer: i } = informer({
      maxObjects: 3,
      backoff: { initialMs: 10, maxMs: 10 },
      onFailure: (err) => failures.push(err.message),
    });
    await i.start();
    await scripted.server.arrival(2, isList, 'the list after the failed watch');
    assert.match(failures[0] ?? '', /a watch event would add object 4/);
    assert.ok(i.size <= 3, `${i.size} cached`);
  });

  it('drops what the transform does not keep; a watch event that drops a cached object removes it', async () => {
    let watches = 0;
    script = (req, res) => {
      if (isList(req))
        return answerJson(
          res,
          200,
          secretList('5', [secret('keep', '5'), secret('drop-me', '5'), secret('b', '5')]),
        );
      watches++;
      if (watches > 1) return hang(res);
      // "b" comes back in a shape the transform refuses.
      stream(
        res,
        watchLine('MODIFIED', { ...secret('b', '6'), data: { bad: 'yes' } }),
        watchLine('ADDED', 7),
      );
    };
    const { informer: i, seen } = informer({
      transform: (o) =>
        o.metadata.name.startsWith('drop') || (o as { data?: Record<string, string> }).data?.bad !== undefined
          ? undefined
          : o,
    });
    await i.start();
    await scripted.server.arrival(2, isWatch, 'the second watch');
    assert.deepEqual(names(i), ['keep']);
    assert.deepEqual(seen, ['ADDED keep', 'ADDED b', 'DELETED b']);
  });
});
