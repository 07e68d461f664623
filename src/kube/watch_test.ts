// One watch stream against a scripted server: what it asks for, events and bookmarks in
// order, ERROR events as classified errors (410 Gone), and every way a stream can fail to end
// on its own (silence, an oversized line, an error answer whose body never ends) bounded.
import assert from 'node:assert/strict';
import type http from 'node:http';
import { describe, it } from 'node:test';
import { isKubeError, KubeError } from './errors.js';
import { Resources, type KubeObject } from './resources.js';
import { useScriptedServer, secret, status, watchLine, type ScriptedRequest } from './testing.js';
import type { WatchEvent, WatchOptions } from './watch.js';

let script: (req: ScriptedRequest, res: http.ServerResponse) => void = () => undefined;
const scripted = useScriptedServer((req, res) => script(req, res));

function watchSecrets(opts: Partial<WatchOptions> = {}): {
  events: Array<WatchEvent<KubeObject>>;
  done: Promise<void>;
  stop: () => void;
} {
  const events: Array<WatchEvent<KubeObject>> = [];
  const w = scripted.client.watch<KubeObject>(Resources.secret, { namespace: 'default', ...opts }, (e) =>
    events.push(e),
  );
  return { events, ...w };
}

/** Settles with the outcome, or with 'still running' after `ms` (the old code's hang). */
async function outcome(done: Promise<void>, ms: number): Promise<'ended' | 'still running' | KubeError> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<'still running'>((r) => (timer = setTimeout(() => r('still running'), ms)));
  try {
    return await Promise.race([
      done.then(
        () => 'ended' as const,
        (err: unknown) => (err instanceof KubeError ? err : Promise.reject(err as Error)),
      ),
      bound,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

describe('watch', () => {
  it('asks for bookmarks from a resourceVersion, and hands over events and bookmarks in order', async () => {
    script = (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write(watchLine('ADDED', secret('a', '11')));
      // Two events in one chunk, a third split across chunks.
      res.write(watchLine('MODIFIED', secret('a', '12')) + watchLine('BOOKMARK', secret('', '13')));
      const deleted = watchLine('DELETED', secret('a', '14'));
      res.write(deleted.slice(0, 10));
      res.end(deleted.slice(10));
    };
    const w = watchSecrets({ resourceVersion: '10', labelSelector: 'x=y', timeoutSeconds: 42 });
    assert.equal(await outcome(w.done, 10_000), 'ended');
    assert.deepEqual(
      w.events.map((e) => `${e.type} ${e.object.metadata.resourceVersion ?? ''}`),
      ['ADDED 11', 'MODIFIED 12', 'BOOKMARK 13', 'DELETED 14'],
    );
    const [req] = scripted.server.requests;
    assert.equal(req?.path, '/api/v1/namespaces/default/secrets');
    assert.deepEqual(Object.fromEntries(req?.query ?? []), {
      watch: '1',
      allowWatchBookmarks: 'true',
      timeoutSeconds: '42',
      labelSelector: 'x=y',
      resourceVersion: '10',
    });
  });

  it('an ERROR event with 410 rejects as Gone, after the events before it', async () => {
    script = (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write(watchLine('ADDED', secret('a', '11')));
      res.end(watchLine('ERROR', status(410, 'Expired', 'too old resource version: 5 (11)')));
    };
    const w = watchSecrets({ resourceVersion: '5' });
    const got = await outcome(w.done, 10_000);
    assert.ok(isKubeError(got, 'Gone'), String(got));
    assert.equal(got.statusCode, 410);
    assert.equal(got.extra.reason, 'Expired');
    assert.match(got.message, /^watch secrets default: too old resource version: 5 \(11\)$/);
    assert.equal(w.events.length, 1);
  });

  it('an ERROR event with another code keeps its kind (500 is a ServerError, retried by callers)', async () => {
    script = (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(watchLine('ERROR', status(500, 'InternalError', 'etcd went away')));
    };
    const got = await outcome(watchSecrets().done, 10_000);
    assert.ok(isKubeError(got, 'ServerError'), String(got));
  });

  it('a silent stream ends after the idle timeout (a half-open connection)', async () => {
    script = (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write('\n'); // headers flushed, then nothing
    };
    const started = performance.now();
    const fresh = scripted.server.client();
    const w = fresh.watch<KubeObject>(
      Resources.secret,
      { namespace: 'default', idleTimeoutMs: 200 },
      () => undefined,
    );
    assert.equal(await outcome(w.done, 10_000), 'ended');
    assert.ok(performance.now() - started >= 190, 'not before the idle timeout');
    // The socket this side closed reports its end a moment later: give it that moment.
    await new Promise((r) => setTimeout(r, 50));
    const refused = new KubeError('CredentialRejected', 'op', 'op: refused');
    assert.equal(fresh.isTransient(refused), false, 'ended here: no news of an outage');
  });

  it('a line larger than 16 MiB ends the watch with an error instead of filling memory', async () => {
    script = (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write('{"type":"ADDED","object":{"metadata":{"name":"');
      const mib = 'x'.repeat(1024 * 1024);
      for (let i = 0; i < 17 && !res.destroyed; i++) res.write(mib);
    };
    const got = await outcome(watchSecrets().done, 20_000);
    assert.ok(got instanceof KubeError, String(got));
    assert.match(got.message, /watch event larger than 16 MiB/);
  });

  it('an error answer whose body never ends is given up after the idle timeout', async () => {
    script = (_req, res) => {
      res.writeHead(500, { 'Content-Type': 'application/json' });
      res.write('{"kind":"Status","code":500,'); // and never more
    };
    const started = performance.now();
    const got = await outcome(watchSecrets({ idleTimeoutMs: 300 }).done, 5_000);
    assert.ok(isKubeError(got, 'ServerError'), String(got));
    assert.equal(got.statusCode, 500);
    assert.ok(performance.now() - started >= 290, 'the body was given the idle timeout');
  });

  it('an error answer is read up to 64 KiB, however fast it streams', async () => {
    let written = 0;
    script = (_req, res) => {
      res.writeHead(503, { 'Content-Type': 'text/plain' });
      const more = (): void => {
        while (!res.destroyed && written < 64 * 1024 * 1024) {
          written += 64 * 1024;
          if (!res.write('e'.repeat(64 * 1024))) return void res.once('drain', more);
        }
      };
      more();
    };
    const got = await outcome(watchSecrets({ idleTimeoutMs: 60_000 }).done, 10_000);
    assert.ok(isKubeError(got, 'ServerError'), String(got));
    assert.ok(got.message.length < 1_000, 'the message keeps a short text');
    assert.ok(written < 16 * 1024 * 1024, `the client stopped reading (${written} bytes written)`);
  });

  it('a stream broken mid-way is an ordinary end, and news of an outage (a 401 next is retried)', async () => {
    script = (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write(watchLine('ADDED', secret('a', '11')));
      setTimeout(() => res.socket?.destroy(), 20);
    };
    const refused = new KubeError('CredentialRejected', 'get secrets', 'get secrets: Unauthorized');
    const fresh = scripted.server.client();
    assert.equal(fresh.isTransient(refused), false);
    const w = fresh.watch<KubeObject>(Resources.secret, { namespace: 'default' }, () => undefined);
    assert.equal(await outcome(w.done, 10_000), 'ended');
    assert.equal(fresh.isTransient(refused), true);
  });

  it('a stream the server ends cleanly is no news of an outage', async () => {
    script = (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(watchLine('ADDED', secret('a', '11')));
    };
    const fresh = scripted.server.client();
    const w = fresh.watch<KubeObject>(Resources.secret, { namespace: 'default' }, () => undefined);
    assert.equal(await outcome(w.done, 10_000), 'ended');
    assert.equal(fresh.isTransient(new KubeError('CredentialRejected', 'op', 'op: refused')), false);
  });

  it('stop() ends a watch at once, and its error answer is not reported', async () => {
    script = (_req, res) => {
      res.writeHead(500, { 'Content-Type': 'application/json' });
      res.write('{');
    };
    const w = watchSecrets({ idleTimeoutMs: 60_000 });
    await scripted.server.arrival(1, () => true, 'the watch request');
    w.stop();
    assert.equal(await outcome(w.done, 5_000), 'ended');
  });
});
