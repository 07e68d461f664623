// waitFor against a scripted server: the list, then a watch from its resourceVersion;
// bookmarks move the resourceVersion on; 410 lists again; the deadline and what the timeout
// reports; and no request storm when every watch ends at once without an event.
import assert from 'node:assert/strict';
import type http from 'node:http';
import { describe, it } from 'node:test';
import { isForbidden, isKubeError } from './errors.js';
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
import { WaitTimeoutError, retryUntil, waitFor, type WaitSpec } from './wait.js';

type Secret = KubeObject & { data?: Record<string, string> };

let script: (req: ScriptedRequest, res: http.ServerResponse) => void = () => undefined;
const kube = useScriptedServer((req, res) => script(req, res));

const ready = (s: Secret | undefined): boolean => s?.data?.['ready'] === 'eWVz';
const spec = (over: Partial<WaitSpec<Secret>> = {}): WaitSpec<Secret> => ({
  type: Resources.secret,
  namespace: 'default',
  name: 's',
  until: ready,
  description: 'Secret default/s to be ready',
  describeState: (s) => (s ? `resourceVersion ${s.metadata.resourceVersion ?? '?'}` : 'absent'),
  timeoutMs: 10_000,
  ...over,
});

/** Lists answer `list`; the nth watch (from 1) is answered by `watches[n-1]`, later ones hang silent. */
function scripted(list: unknown, watches: Array<(res: http.ServerResponse) => void>): void {
  let n = 0;
  script = (req, res) => {
    if (req.query.get('watch') !== '1') return answerJson(res, 200, list);
    const answer = watches[n++];
    if (answer) return answer(res);
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.write('\n');
  };
}

const stream =
  (...lines: string[]) =>
  (res: http.ServerResponse): void => {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(lines.join(''));
  };

describe('waitFor', () => {
  it('lists by name, watches from the list, and follows bookmarks to the event it waits for', async () => {
    scripted(secretList('10', [secret('s', '10')]), [
      stream(watchLine('BOOKMARK', secret('', '15'))),
      stream(watchLine('MODIFIED', secret('s', '16', { ready: 'eWVz' }))),
    ]);
    const got = await waitFor(kube.client, spec());
    assert.equal(got?.metadata.resourceVersion, '16');
    const [list, first, second] = kube.server.requests;
    assert.equal(list?.query.get('fieldSelector'), 'metadata.name=s');
    assert.equal(first?.query.get('resourceVersion'), '10');
    assert.equal(second?.query.get('resourceVersion'), '15', 'resumed from the bookmark, without a list');
    assert.equal(kube.server.requests.length, 3);
  });

  it('lists again after 410 Gone and is satisfied by the fresh list', async () => {
    let lists = 0;
    script = (req, res) => {
      if (req.query.get('watch') === '1') {
        return stream(watchLine('ERROR', status(410, 'Expired', 'too old resource version')))(res);
      }
      lists++;
      answerJson(
        res,
        200,
        secretList(String(lists * 10), [secret('s', String(lists * 10), lists > 1 ? { ready: 'eWVz' } : {})]),
      );
    };
    const got = await waitFor(kube.client, spec());
    assert.equal(got?.metadata.resourceVersion, '20');
    assert.deepEqual(
      kube.server.requests.map((r) =>
        r.query.get('watch') ? `watch ${r.query.get('resourceVersion') ?? ''}` : 'list',
      ),
      ['list', 'watch 10', 'list'],
    );
  });

  it('starts from the object it is given, without a list', async () => {
    scripted(secretList('99', []), [stream(watchLine('DELETED', secret('s', '31')))]);
    const got = await waitFor(kube.client, {
      ...spec(),
      until: (s) => s === undefined,
      from: secret('s', '30'),
    });
    assert.equal(got, undefined);
    assert.equal(kube.server.lists().length, 0);
    assert.equal(kube.server.watches()[0]?.query.get('resourceVersion'), '30');
  });

  it('gives up at its deadline saying what it waited for and what it saw last', async () => {
    scripted(secretList('10', [secret('s', '10')]), []);
    const progress: string[] = [];
    const started = performance.now();
    await assert.rejects(
      waitFor(kube.client, spec({ timeoutMs: 400, onProgress: (state) => progress.push(state) })),
      (err: unknown) => {
        assert.ok(err instanceof WaitTimeoutError, String(err));
        assert.ok(isKubeError(err, 'Timeout'));
        assert.equal(err.description, 'Secret default/s to be ready');
        assert.equal(err.lastState, 'resourceVersion 10');
        assert.match(
          err.message,
          /^timed out after .+ waiting for Secret default\/s to be ready; last seen: resourceVersion 10$/,
        );
        return true;
      },
    );
    const elapsed = performance.now() - started;
    assert.ok(elapsed >= 390 && elapsed < 5_000, `gave up after ${elapsed} ms`);
    assert.deepEqual(progress, ['resourceVersion 10']);
  });

  it('ends at once when its signal aborts, its watch stopped, long before its deadline', async () => {
    scripted(secretList('10', [secret('s', '10')]), []);
    const abort = new AbortController();
    const started = performance.now();
    const waiting = waitFor(kube.client, spec({ timeoutMs: 60_000, signal: abort.signal }));
    setTimeout(() => abort.abort(new Error('stopped by its owner')), 200);
    await assert.rejects(waiting, /stopped by its owner/);
    const elapsed = performance.now() - started;
    assert.ok(elapsed < 5_000, `ended after ${elapsed} ms`);
    assert.equal(kube.server.watches().length, 1, 'one watch, not re-opened after the abort');
  });

  it('measures its deadline on the clock it is given', async () => {
    scripted(secretList('10', []), []);
    let clock = 1_000_000;
    const started = performance.now();
    const waiting = waitFor(kube.client, {
      ...spec({ timeoutMs: 3_600_000 }),
      now: () => clock,
      // An hour passes as soon as the list is answered.
      onProgress: () => (clock += 3_600_000),
    });
    await assert.rejects(
      waiting,
      (err: unknown) => err instanceof WaitTimeoutError && err.lastState === 'absent',
    );
    assert.ok(performance.now() - started < 5_000, 'no real hour, nor a watch left open');
  });

  it('paces re-opened watches when each ends at once without an event: at most 10 requests in 2 s', async () => {
    script = (req, res) => {
      if (req.query.get('watch') === '1') return stream()(res); // 200, empty body
      answerJson(res, 200, secretList('10', []));
    };
    await assert.rejects(waitFor(kube.client, spec({ timeoutMs: 2_000 })), WaitTimeoutError);
    assert.ok(kube.server.requests.length <= 10, `${kube.server.requests.length} requests in 2 s`);
    assert.ok(kube.server.watches().length >= 2, 'it did try again');
  });

  it('resumes at once after a watch that delivered an event, however short', async () => {
    // A backoff this long would hold the next watch for minutes.
    let n = 0;
    script = (req, res) => {
      if (req.query.get('watch') !== '1') return answerJson(res, 200, secretList('10', [secret('s', '10')]));
      n++;
      stream(watchLine('MODIFIED', secret('s', String(10 + n), n === 5 ? { ready: 'eWVz' } : {})))(res);
    };
    const got = await waitFor(kube.client, spec({ backoff: { initialMs: 600_000, maxMs: 600_000 } }));
    assert.equal(got?.metadata.resourceVersion, '15');
    assert.equal(kube.server.watches().length, 5);
    assert.equal(kube.server.lists().length, 1);
  });

  it('backs off after a failed watch and lists again, up to its deadline', async () => {
    script = (req, res) => {
      if (req.query.get('watch') === '1') return answerJson(res, 500, status(500, 'InternalError', 'etcd'));
      answerJson(res, 200, secretList('10', []));
    };
    await assert.rejects(waitFor(kube.client, spec({ timeoutMs: 1_500 })), WaitTimeoutError);
    const watches = kube.server.watches().length;
    assert.ok(watches >= 2 && watches <= 6, `${watches} watches in 1.5 s`);
    assert.equal(kube.server.lists().length, watches, 'each failed watch is followed by a list');
  });

  it('across a restart: the watch breaks, the new server refuses the credential while starting, the wait goes on', async () => {
    let watches = 0;
    let lists = 0;
    script = (req, res) => {
      if (req.query.get('watch') !== '1') {
        lists++;
        return answerJson(
          res,
          200,
          secretList('10', [secret('s', '10', lists > 1 ? { ready: 'eWVz' } : {})]),
        );
      }
      watches++;
      if (watches === 1) {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.write('\n');
        return void setTimeout(() => res.socket?.destroy(), 20); // the old server exits
      }
      // The new one, before its authenticators have synced.
      answerJson(res, 401, status(401, 'Unauthorized', 'Unauthorized'));
    };
    const got = await waitFor(kube.server.client(), spec());
    assert.equal(got?.metadata.resourceVersion, '10');
    assert.equal(lists, 2);
  });

  it('lists again after a list the server did not answer in time (a restarted apiserver filling its cache)', async () => {
    let lists = 0;
    script = (req, res) => {
      if (req.query.get('watch') === '1') return stream()(res);
      if (++lists === 1) return; // no answer: the client's request deadline ends it
      answerJson(res, 200, secretList('10', [secret('s', '10', { ready: 'eWVz' })]));
    };
    const got = await waitFor(kube.server.client({ requestTimeoutMs: 200 }), spec());
    assert.equal(got?.metadata.resourceVersion, '10');
    assert.equal(lists, 2);
  });

  it('fails at once on an error that is not transient', async () => {
    script = (_req, res) => answerJson(res, 403, status(403, 'Forbidden', 'User "u" cannot list secrets'));
    // A client that has seen no outage (after one, a 403 may be a server still starting).
    await assert.rejects(waitFor(kube.server.client(), spec()), (err: unknown) => isForbidden(err));
    assert.equal(kube.server.requests.length, 1);
  });
});

describe('retryUntil: a deadline around a repeated try', () => {
  it('returns the first value a try gives, trying again after each undefined', async () => {
    let tries = 0;
    const got = await retryUntil({
      attempt: () => Promise.resolve(++tries < 3 ? undefined : `try ${tries}`),
      description: 'the third try',
      timeoutMs: 5_000,
      intervalMs: 1,
    });
    assert.equal(got, 'try 3');
    assert.equal(tries, 3);
  });

  it('gives up at the deadline, saying what it waited for and what it last saw', async () => {
    let clock = 0;
    let tries = 0;
    await assert.rejects(
      retryUntil({
        attempt: () => {
          tries++;
          clock += 400;
          return Promise.resolve(undefined);
        },
        description: 'the credential to be refused',
        lastState: () => 'accepted',
        timeoutMs: 1_000,
        intervalMs: 1,
        now: () => clock,
      }),
      (err: unknown) =>
        err instanceof WaitTimeoutError &&
        /waiting for the credential to be refused; last seen: accepted/.test(err.message),
    );
    assert.equal(tries, 3);
  });

  it('ends with the error a try throws', async () => {
    await assert.rejects(
      retryUntil({
        attempt: () => Promise.reject(new Error('refused for another reason')),
        description: 'x',
        timeoutMs: 5_000,
      }),
      /refused for another reason/,
    );
  });
});
