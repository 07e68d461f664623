// Every failure to encode or decode gob data is a GobError, so callers can tell
// "the peer sent something we cannot read" apart from bugs in our own code.

export class GobError extends Error {
  /**
   * Fatal errors break the stream framing itself (a message length we refuse, bytes
   * after a broken length prefix): nothing after them can be read, so the
   * connection must be closed. Other errors lose one value and the stream goes on
   * at the next message, as Go's decoder does.
   */
  readonly fatal: boolean;

  constructor(message: string, options: { fatal?: boolean } = {}) {
    super(message.startsWith('gob: ') ? message : `gob: ${message}`);
    this.name = 'GobError';
    this.fatal = options.fatal ?? false;
  }
}
