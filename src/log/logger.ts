// One logger for every component. Lines are redacted before they are written.
// Plugins log plain lines (rancher-machine prefixes them); the controller logs JSON.
import { redact } from './redact.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  child(fields: LogFields): Logger;
}

export interface LogSink {
  write(level: LogLevel, line: string): void;
}

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface LoggerOptions {
  level?: LogLevel;
  format?: 'plain' | 'json';
  sink?: LogSink;
  fields?: LogFields;
  now?: () => Date;
}

/** Writes info/debug to stdout and warn/error to stderr. */
export const consoleSink: LogSink = {
  write(level, line) {
    (level === 'warn' || level === 'error' ? process.stderr : process.stdout).write(line + '\n');
  },
};

export function createLogger(options: LoggerOptions = {}): Logger {
  const min = ORDER[options.level ?? 'info'];
  const format = options.format ?? 'plain';
  const sink = options.sink ?? consoleSink;
  const base = options.fields ?? {};
  const now = options.now ?? (() => new Date());

  const emit = (level: LogLevel, msg: string, fields?: LogFields): void => {
    if (ORDER[level] < min) return;
    const all = { ...base, ...fields };
    let line: string;
    if (format === 'json') {
      line = JSON.stringify({ ts: now().toISOString(), level, msg, ...all }, jsonSafe);
    } else {
      const extra = Object.entries(all)
        .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v, jsonSafe)}`)
        .join(' ');
      line = extra ? `${msg} ${extra}` : msg;
    }
    sink.write(level, redact(line));
  };

  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (fields) => createLogger({ ...options, fields: { ...base, ...fields } }),
  };
}

function jsonSafe(_key: string, value: unknown): unknown {
  if (value instanceof Error) return value.message;
  return value;
}

/** A logger that drops everything (tests of pure code, quiet library use). */
export const silentLogger: Logger = createLogger({ sink: { write: () => undefined } });
