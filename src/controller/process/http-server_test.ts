import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseBindAddress, startHttpServer } from './http-server.js';

describe('http server', () => {
  it('parses bind addresses', () => {
    assert.deepEqual(parseBindAddress('127.0.0.1:8080'), { host: '127.0.0.1', port: 8080 });
    assert.deepEqual(parseBindAddress(':9090'), { host: '0.0.0.0', port: 9090 });
    assert.deepEqual(parseBindAddress('[::1]:1'), { host: '::1', port: 1 });
    assert.throws(() => parseBindAddress('8080'));
  });
  it('serves metrics, health and readiness', async () => {
    let ready = false;
    const s = await startHttpServer('127.0.0.1:0', {
      healthy: () => true,
      ready: () => ready,
      metrics: () => Promise.resolve('m 1\n'),
    });
    try {
      const get = async (p: string) => {
        const r = await fetch(`http://127.0.0.1:${s.port}${p}`);
        return [r.status, await r.text()] as const;
      };
      assert.deepEqual(await get('/metrics'), [200, 'm 1\n']);
      assert.deepEqual(await get('/healthz'), [200, 'ok\n']);
      assert.equal((await get('/readyz'))[0], 503);
      ready = true;
      assert.equal((await get('/readyz'))[0], 200);
      assert.equal((await get('/nope'))[0], 404);
    } finally {
      await s.close();
    }
  });
});
