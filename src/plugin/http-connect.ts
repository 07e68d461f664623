// The HTTP step before net/rpc: Go's rpc.DialHTTP sends "CONNECT /_goRPC_ HTTP/1.0\n\n"
// and expects "HTTP/1.0 200 Connected to Go RPC\n\n"; the raw connection then carries
// gob. Anything else gets the answer Go's http server and rpc handler would give, and
// the connection is closed.

export const RPC_PATH = '/_goRPC_';
export const CONNECTED_RESPONSE = 'HTTP/1.0 200 Connected to Go RPC\n\n';
/** Go allows 1 MiB of request head; the only legitimate one here is 26 bytes. */
export const MAX_HANDSHAKE_BYTES = 8 * 1024;

export type Handshake =
  | { readonly kind: 'incomplete' }
  | { readonly kind: 'connect'; readonly rest: Uint8Array }
  | { readonly kind: 'reject'; readonly status: number; readonly response: string };

const REASONS: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  404: 'Not Found',
  405: 'Method Not Allowed',
  431: 'Request Header Fields Too Large',
  505: 'HTTP Version Not Supported',
};

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const VERSION = /^HTTP\/(\d)\.(\d)$/;

/** Parses what has arrived so far on a new connection. */
export function parseHandshake(data: Uint8Array): Handshake {
  const end = endOfHead(data);
  if (end === undefined) {
    return data.length > MAX_HANDSHAKE_BYTES
      ? reject(431, '1.1', '431 Request Header Fields Too Large')
      : INCOMPLETE;
  }
  if (end.headLength > MAX_HANDSHAKE_BYTES) return reject(431, '1.1', '431 Request Header Fields Too Large');
  const head = Buffer.from(data.subarray(0, end.headLength)).toString('latin1');
  const [requestLine = '', ...headerLines] = head.split('\n').map((line) => line.replace(/\r$/, ''));
  const parts = requestLine.split(' ');
  if (parts.length !== 3) return reject(400, '1.1', '400 Bad Request');
  const [method = '', target = '', proto = ''] = parts;
  const version = VERSION.exec(proto);
  if (!TOKEN.test(method) || target === '' || version === null) return reject(400, '1.1', '400 Bad Request');
  if (version[1] !== '1') return reject(505, '1.1', '505 HTTP Version Not Supported');
  const minor = version[2] === '0' ? '1.0' : '1.1';
  const headers = headerLines.filter((line) => line !== '');
  if (headers.some((line) => !/^[^\s:]+:/.test(line))) return reject(400, minor, '400 Bad Request');
  if (minor === '1.1' && !headers.some((line) => /^host:/i.test(line))) {
    return reject(400, minor, '400 Bad Request: missing required Host header');
  }
  const path = target.split('?')[0];
  if (path !== RPC_PATH) return reject(404, minor, '404 page not found\n');
  if (method !== 'CONNECT') return reject(405, minor, '405 must CONNECT\n');
  return { kind: 'connect', rest: data.subarray(end.headLength) };
}

const INCOMPLETE: Handshake = Object.freeze({ kind: 'incomplete' });

/** The length of the request head, up to and including the blank line ("\n\n" or "\r\n\r\n"). */
function endOfHead(data: Uint8Array): { headLength: number } | undefined {
  const limit = Math.min(data.length, MAX_HANDSHAKE_BYTES + 4);
  for (let i = 0; i < limit; i++) {
    if (data[i] !== 0x0a) continue;
    if (data[i + 1] === 0x0a) return { headLength: i + 2 };
    if (data[i + 1] === 0x0d && data[i + 2] === 0x0a) return { headLength: i + 3 };
  }
  return undefined;
}

function reject(status: number, httpVersion: string, body: string): Handshake {
  const response =
    `HTTP/${httpVersion} ${status} ${REASONS[status] ?? 'Error'}\r\n` +
    'Content-Type: text/plain; charset=utf-8\r\n' +
    'X-Content-Type-Options: nosniff\r\n' +
    'Connection: close\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n` +
    body;
  return { kind: 'reject', status, response };
}
