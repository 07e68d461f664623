import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { CONNECTED_RESPONSE, MAX_HANDSHAKE_BYTES, parseHandshake } from './http-connect.js';

const bytes = (text: string): Uint8Array => Buffer.from(text, 'latin1');

describe('parseHandshake', () => {
  it("accepts rpc.DialHTTP's exact request and keeps the bytes after it", () => {
    const result = parseHandshake(bytes('CONNECT /_goRPC_ HTTP/1.0\n\n\x2f\xff'));
    assert.equal(result.kind, 'connect');
    assert.deepEqual(result.kind === 'connect' && [...result.rest], [0x2f, 0xff]);
    assert.equal(CONNECTED_RESPONSE, 'HTTP/1.0 200 Connected to Go RPC\n\n');
  });

  it('accepts CRLF, headers and HTTP/1.1 with a Host', () => {
    assert.equal(parseHandshake(bytes('CONNECT /_goRPC_ HTTP/1.0\r\n\r\n')).kind, 'connect');
    assert.equal(parseHandshake(bytes('CONNECT /_goRPC_ HTTP/1.1\r\nHost: x\r\n\r\n')).kind, 'connect');
  });

  it('waits for the blank line, whatever the chunking', () => {
    const full = 'CONNECT /_goRPC_ HTTP/1.0\n\n';
    for (let cut = 0; cut < full.length; cut++) {
      assert.equal(parseHandshake(bytes(full.slice(0, cut))).kind, 'incomplete', `cut at ${cut}`);
    }
  });

  it("answers other requests as Go's http server and rpc handler do", () => {
    const answer = (text: string): string => {
      const result = parseHandshake(bytes(text));
      assert.equal(result.kind, 'reject', text);
      return result.kind === 'reject' ? result.response : '';
    };
    const get = answer('GET /_goRPC_ HTTP/1.0\n\n');
    assert.match(get, /^HTTP\/1\.0 405 Method Not Allowed\r\n/);
    assert.ok(get.endsWith('\r\n\r\n405 must CONNECT\n'));
    assert.match(
      answer('CONNECT /debug/rpc HTTP/1.0\n\n'),
      /^HTTP\/1\.0 404 Not Found\r\n[\s\S]*404 page not found\n$/,
    );
    assert.match(
      answer('CONNECT /_goRPC_ HTTP/1.1\n\n'),
      /^HTTP\/1\.1 400 Bad Request\r\n[\s\S]*missing required Host/,
    );
    assert.match(answer('\x16\x03\x01 hello\n\n'), /^HTTP\/1\.1 400 Bad Request/);
    assert.match(answer('CONNECT /_goRPC_ HTTP/2.0\n\n'), /^HTTP\/1\.1 505 /);
    assert.match(answer('CONNECT /_goRPC_ HTTP/1.0\nno colon here\n\n'), / 400 /);
    assert.match(answer('x'.repeat(MAX_HANDSHAKE_BYTES + 1)), /^HTTP\/1\.1 431 /);
  });

  it('never throws on random input', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (input) => {
        parseHandshake(input);
      }),
      { numRuns: 2000 },
    );
  });
});
