// The two clocks of a watch stream: silence (no byte for idleMs: a half-open connection after
// an apiserver restart otherwise hangs forever) and lifetime (a stream that outlives its
// server-side timeout by far, trickling bytes so that it is never silent).
export class StreamTimers {
  private idle: NodeJS.Timeout;
  private readonly lifetime: NodeJS.Timeout;

  constructor(
    private readonly idleMs: number,
    lifetimeMs: number,
    private readonly onExpired: () => void,
  ) {
    this.idle = setTimeout(onExpired, idleMs);
    this.lifetime = setTimeout(onExpired, lifetimeMs);
  }

  /** Bytes arrived: the silence starts again. */
  touched(): void {
    clearTimeout(this.idle);
    this.idle = setTimeout(this.onExpired, this.idleMs);
  }

  clear(): void {
    clearTimeout(this.idle);
    clearTimeout(this.lifetime);
  }
}
