// A net/rpc client in TypeScript (what Go's rpc.DialHTTP + Client do), for in-process
// tests of the server: calls run concurrently and answers are matched by Seq.
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { driverRegistry } from '../driver-types.js';
import { GobDecoder } from '../gob/decoder.js';
import { GobEncoder, gobItem } from '../gob/encoder.js';
import { goEmptyStruct } from '../gob/go-types.js';
import type { GoType, GoValue } from '../gob/go-types.js';
import type { InterfaceRegistry } from '../gob/interface-registry.js';
import { rpcRequestType, rpcResponseType } from '../net-rpc-types.js';
import type { RpcResponseHeader } from '../net-rpc-types.js';

export type CallResult<T> = { readonly reply: T } | { readonly error: string };

interface Pending {
  readonly replyType: GoType;
  readonly resolve: (result: CallResult<unknown>) => void;
  readonly reject: (error: Error) => void;
}

export class RpcTestClient {
  private readonly encoder: GobEncoder;
  private readonly decoder: GobDecoder;
  private readonly pending = new Map<bigint, Pending>();
  private nextSeq = 0n;
  private header: RpcResponseHeader | undefined;
  /** Seq of every answer, in arrival order. */
  readonly answered: bigint[] = [];
  /** Resolves when the server closes the connection. */
  readonly closed: Promise<void>;

  private constructor(
    private readonly socket: Socket,
    registry: InterfaceRegistry,
    rest: Uint8Array,
  ) {
    this.encoder = new GobEncoder(registry);
    this.decoder = new GobDecoder(registry);
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('close', () => {
      for (const p of this.pending.values()) p.reject(new Error('connection closed'));
      this.pending.clear();
    });
    socket.on('error', () => undefined);
    if (rest.length > 0) this.onData(rest);
  }

  /** Connects and performs the CONNECT handshake, as rpc.DialHTTP does. */
  static async dial(address: string, registry: InterfaceRegistry = driverRegistry()): Promise<RpcTestClient> {
    const [host = '', port = ''] = address.split(':');
    const socket = connect({ host, port: Number(port) });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    socket.write('CONNECT /_goRPC_ HTTP/1.0\n\n');
    const { head, rest } = await readHead(socket);
    if (head !== 'HTTP/1.0 200 Connected to Go RPC\n\n') throw new Error(`unexpected HTTP response: ${head}`);
    return new RpcTestClient(socket, registry, rest);
  }

  call<R extends GoType>(
    serviceMethod: string,
    replyType: R,
    argType: GoType = goEmptyStruct,
    arg: unknown = {},
  ): Promise<CallResult<GoValue<R>>> {
    const seq = this.nextSeq++;
    const bytes = this.encoder.encodeAll([
      gobItem(rpcRequestType, { ServiceMethod: serviceMethod, Seq: seq }),
      { type: argType, value: arg },
    ]);
    return new Promise((resolve, reject) => {
      this.pending.set(seq, { replyType, resolve: resolve as (r: CallResult<unknown>) => void, reject });
      this.socket.write(bytes);
    });
  }

  /** Sends bytes as they are (hostile input). */
  writeRaw(bytes: Uint8Array): void {
    this.socket.write(bytes);
  }

  /** Closes our sending side only; answers still arrive. */
  endWriting(): void {
    this.socket.end();
  }

  close(): void {
    this.socket.destroy();
  }

  private onData(chunk: Uint8Array): void {
    this.decoder.push(chunk);
    for (;;) {
      if (this.header === undefined) {
        const header = this.decoder.read(rpcResponseType);
        if (!header.done) return;
        this.header = header.value;
      }
      const header = this.header;
      const pending = this.pending.get(header.Seq);
      const body =
        header.Error !== '' || pending === undefined
          ? this.decoder.skip()
          : this.decoder.read(pending.replyType);
      if (!body.done) return;
      this.header = undefined;
      this.answered.push(header.Seq);
      this.pending.delete(header.Seq);
      pending?.resolve(header.Error !== '' ? { error: header.Error } : { reply: body.value });
    }
  }
}

/** Reads an HTTP response head ("...\n\n"); the bytes after it belong to gob. */
export function readHead(socket: Socket): Promise<{ head: string; rest: Buffer }> {
  return new Promise((resolve, reject) => {
    let buffer = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      buffer = Buffer.concat([buffer, chunk]);
      const end = buffer.indexOf('\n\n');
      if (end < 0) return;
      socket.off('data', onData);
      socket.off('close', onClose);
      resolve({ head: buffer.subarray(0, end + 2).toString('latin1'), rest: buffer.subarray(end + 2) });
    };
    const onClose = (): void => reject(new Error(`closed during handshake: ${buffer.toString('latin1')}`));
    socket.on('data', onData);
    socket.once('close', onClose);
  });
}

/** Sends raw bytes on a new connection and returns everything the server writes until it closes. */
export async function exchangeRaw(address: string, ...writes: Array<string | Uint8Array>): Promise<string> {
  const [host = '', port = ''] = address.split(':');
  const socket = connect({ host, port: Number(port) });
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise<void>((resolve) => socket.once('connect', resolve));
  for (const w of writes) {
    socket.write(w);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  await closed;
  return Buffer.concat(chunks).toString('latin1');
}
