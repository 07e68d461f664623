// One net/rpc connection: the HTTP CONNECT step, then a gob stream each way.
//
// Behaviour follows Go's net/rpc server (ServeCodec): requests are served
// concurrently and answered in completion order, matched by Seq; a header that
// cannot be decoded ends the connection (after the calls in progress have answered);
// an unknown service or method, or an argument that cannot be decoded, is answered
// with an error and the connection goes on. Each answer (header and body) is encoded
// and written in one piece, so answers never interleave.
import type { Socket } from 'node:net';
import { GobDecoder } from './gob/decoder.js';
import { GobEncoder, gobItem } from './gob/encoder.js';
import type { GobItem } from './gob/encoder.js';
import { GobError } from './gob/gob-error.js';
import type { InterfaceRegistry } from './gob/interface-registry.js';
import type { GobLimits } from './gob/limits.js';
import { CONNECTED_RESPONSE, MAX_HANDSHAKE_BYTES, parseHandshake } from './http-connect.js';
import { EMPTY_STRUCT, emptyStructType, rpcRequestType, rpcResponseType } from './net-rpc-types.js';
import type { RpcRequestHeader } from './net-rpc-types.js';
import { errorText, route } from './rpc-service.js';
import type { RpcMethod, RpcServices } from './rpc-service.js';
import type { Logger } from '../log/logger.js';
import { redact } from '../log/redact.js';

export interface RpcConnectionOptions {
  readonly services: RpcServices;
  readonly registry: InterfaceRegistry;
  readonly logger: Logger;
  readonly limits?: Partial<GobLimits>;
  /** Called for every request header read (the plugin's liveness signal). */
  readonly onRequest?: (serviceMethod: string) => void;
  /** Calls running at once on one connection before we stop reading more. */
  readonly maxInFlight: number;
  /** Time allowed for the CONNECT request. */
  readonly handshakeTimeoutMs: number;
}

type Outcome = { readonly reply: unknown } | { readonly error: string };

/** Stop reading while this much of our output waits for a peer that does not read it. */
const MAX_PENDING_OUTPUT = 1024 * 1024;
/** Longer error texts are cut: they end up in rancher-machine's output and Rancher's UI. */
const MAX_ERROR_CHARS = 16_000;
/** How long a closing connection waits for the peer to close its side. */
const FINISH_GRACE_MS = 2000;

export class RpcConnection {
  private state: 'handshake' | 'rpc' | 'draining' | 'closed' = 'handshake';
  private handshakeBytes = Buffer.alloc(0);
  private readonly decoder: GobDecoder;
  private readonly encoder: GobEncoder;
  /** A header whose argument has not fully arrived. */
  private header: RpcRequestHeader | undefined;
  private inFlight = 0;
  private readingPaused = false;
  private readonly handshakeTimer: NodeJS.Timeout;
  private readonly log: Logger;

  constructor(
    private readonly socket: Socket,
    private readonly options: RpcConnectionOptions,
    readonly onClosed: (connection: RpcConnection) => void,
  ) {
    this.log = options.logger;
    this.decoder = new GobDecoder(options.registry, options.limits);
    this.encoder = new GobEncoder(options.registry, options.limits);
    this.handshakeTimer = setTimeout(() => {
      this.log.debug(`rpc: no CONNECT request within ${options.handshakeTimeoutMs} ms, closing`);
      socket.destroy();
    }, options.handshakeTimeoutMs);
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('end', () => this.onEnd());
    socket.on('drain', () => this.resumeIfPossible());
    socket.on('error', (err) => this.log.debug(`rpc: connection error: ${err.message}`));
    socket.on('close', () => {
      clearTimeout(this.handshakeTimer);
      this.state = 'closed';
      onClosed(this);
    });
  }

  /** Closes the connection at once, dropping calls in progress. */
  destroy(): void {
    this.socket.destroy();
  }

  private onData(chunk: Buffer): void {
    if (this.state === 'handshake') {
      this.handshakeBytes = Buffer.concat([this.handshakeBytes, chunk]);
      this.handshake();
    } else if (this.state === 'rpc') {
      this.decoder.push(chunk);
      this.pump();
    }
  }

  private handshake(): void {
    const result = parseHandshake(this.handshakeBytes);
    switch (result.kind) {
      case 'incomplete':
        if (this.handshakeBytes.length > MAX_HANDSHAKE_BYTES * 2) this.socket.destroy();
        return;
      case 'reject':
        clearTimeout(this.handshakeTimer);
        this.log.debug(`rpc: refused a connection: HTTP ${result.status}`);
        this.state = 'draining';
        this.socket.write(result.response);
        this.finish();
        return;
      case 'connect':
        clearTimeout(this.handshakeTimer);
        this.state = 'rpc';
        this.handshakeBytes = Buffer.alloc(0);
        this.socket.write(CONNECTED_RESPONSE);
        if (result.rest.length > 0) this.decoder.push(result.rest);
        this.pump();
        return;
    }
  }

  /** Reads and starts every complete request, as far as the in-flight bound allows. */
  private pump(): void {
    while (this.state === 'rpc') {
      if (this.inFlight >= this.options.maxInFlight || this.socket.writableLength > MAX_PENDING_OUTPUT) {
        this.pauseReading();
        return;
      }
      if (this.header === undefined) {
        let result;
        try {
          result = this.decoder.read(rpcRequestType);
        } catch (e) {
          // Like Go: a header we cannot read ends the connection.
          this.stopReading(`cannot decode request header: ${e instanceof Error ? e.message : String(e)}`);
          return;
        }
        if (!result.done) return;
        this.header = result.value;
        this.options.onRequest?.(this.header.ServiceMethod);
      }
      const header = this.header;
      const target = route(this.options.services, header.ServiceMethod);
      let body;
      try {
        body = 'method' in target ? this.decoder.read(target.method.argType) : this.decoder.skip();
      } catch (e) {
        if (!(e instanceof GobError) || e.fatal) {
          this.stopReading(`cannot decode request body: ${e instanceof Error ? e.message : String(e)}`);
          return;
        }
        this.header = undefined;
        // Go answers with the lookup error if there was one, else the decoding error.
        this.send(header, { error: 'error' in target ? target.error : e.message });
        continue;
      }
      if (!body.done) return;
      this.header = undefined;
      if ('error' in target) this.send(header, { error: target.error });
      else this.start(header, target.method, body.value);
    }
  }

  private start(header: RpcRequestHeader, method: RpcMethod, arg: unknown): void {
    if (!header.ServiceMethod.endsWith('.Heartbeat')) {
      this.log.debug(`rpc: call ${header.ServiceMethod} (seq ${header.Seq})`);
    }
    this.inFlight++;
    void this.run(header, method, arg);
  }

  private async run(header: RpcRequestHeader, method: RpcMethod, arg: unknown): Promise<void> {
    let outcome: Outcome;
    try {
      outcome = { reply: await method.call(arg) };
    } catch (e) {
      outcome = { error: errorText(e) };
      this.log.debug(`rpc: ${header.ServiceMethod} (seq ${header.Seq}) failed: ${outcome.error}`);
    }
    this.inFlight--;
    this.send(header, outcome, method);
    if (this.state === 'draining' && this.inFlight === 0) this.finish();
    this.resumeIfPossible();
  }

  /** Encodes and writes one answer in a single write. */
  private send(header: RpcRequestHeader, outcome: Outcome, method?: RpcMethod): void {
    if (this.state === 'closed' || this.socket.destroyed || !this.socket.writable) return;
    let bytes: Uint8Array;
    let afterReply: (() => void) | undefined;
    if ('error' in outcome) {
      bytes = this.encodeError(header, outcome.error);
    } else {
      try {
        bytes = this.encoder.encodeAll([
          this.responseHeader(header, ''),
          { type: method?.replyType ?? emptyStructType, value: outcome.reply },
        ]);
        afterReply = method?.afterReply;
      } catch (e) {
        // Go would close the connection; an error answer tells the caller what went wrong.
        const error = `cannot send the reply of ${header.ServiceMethod}: ${errorText(e)}`;
        this.log.error(error);
        bytes = this.encodeError(header, error);
      }
    }
    this.socket.write(bytes, () => afterReply?.());
  }

  private encodeError(header: RpcRequestHeader, error: string): Uint8Array {
    let text = redact(error);
    if (text.length > MAX_ERROR_CHARS) {
      text = `${text.slice(0, MAX_ERROR_CHARS)} … [${text.length - MAX_ERROR_CHARS} more characters cut]`;
    }
    return this.encoder.encodeAll([
      this.responseHeader(header, text),
      gobItem(emptyStructType, EMPTY_STRUCT),
    ]);
  }

  private responseHeader(header: RpcRequestHeader, error: string): GobItem {
    return gobItem(rpcResponseType, { ServiceMethod: header.ServiceMethod, Seq: header.Seq, Error: error });
  }

  private onEnd(): void {
    // The peer will send nothing more; answer what is running, then close (Go: wg.Wait()).
    if (this.state === 'rpc' || this.state === 'handshake') this.stopReading('peer closed its side');
  }

  private stopReading(reason: string): void {
    this.log.debug(`rpc: closing connection: ${reason}`);
    this.state = 'draining';
    this.socket.pause();
    if (this.inFlight === 0) this.finish();
  }

  /** Ends our side; a peer that never closes its side is cut off shortly after. */
  private finish(): void {
    this.socket.end();
    setTimeout(() => this.socket.destroy(), FINISH_GRACE_MS).unref();
  }

  private pauseReading(): void {
    if (this.readingPaused) return;
    this.readingPaused = true;
    this.socket.pause();
  }

  private resumeIfPossible(): void {
    if (!this.readingPaused || this.state !== 'rpc') return;
    if (this.inFlight >= this.options.maxInFlight || this.socket.writableLength > MAX_PENDING_OUTPUT) return;
    this.readingPaused = false;
    this.socket.resume();
    this.pump();
  }
}
