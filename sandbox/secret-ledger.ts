// The secrets scan's two inputs, written while the suite runs (scripts/test.sh sets
// HM_SECRET_LEDGER; without it every function here does nothing):
// - the ledger: every token, key and kubeconfig secret the sandbox and the tests create,
//   one JSON line each, so that the scan after the suite (test/support/secret-scan.ts)
//   knows exactly what must never appear;
// - captured output: log lines and errors that tests keep in memory (a driver's captured
//   log, a plugin's stderr), which would otherwise never reach a file the scan reads.
// Both live in the ledger's directory, which test.sh creates 0700 and deletes afterwards.
import fs from 'node:fs';
import path from 'node:path';

export const LEDGER_ENV = 'HM_SECRET_LEDGER';

/** Where captured output goes: <ledger dir>/captured/<pid>.log, one file per test process. */
export function capturedLogPath(ledger: string, pid = process.pid): string {
  return path.join(path.dirname(ledger), 'captured', `${pid}.log`);
}

function ledgerPath(): string | undefined {
  return process.env[LEDGER_ENV] || undefined;
}

/** Appends `what` (a description, never secret) and `value` to the ledger. */
export function recordSecret(what: string, value: string | undefined): void {
  const ledger = ledgerPath();
  if (!ledger || !value) return;
  fs.appendFileSync(ledger, JSON.stringify({ what, value }) + '\n', { mode: 0o600 });
}

/** Appends output a test captured (a log line, an error message) for the scan. */
export function recordOutput(source: string, text: string): void {
  const ledger = ledgerPath();
  if (!ledger) return;
  const file = capturedLogPath(ledger);
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  fs.appendFileSync(file, `[${source}] ${text}\n`, { mode: 0o600 });
}

/** An error's message and stack as the scan should see them (what a failing test prints). */
export function recordError(source: string, err: unknown): void {
  recordOutput(source, err instanceof Error ? (err.stack ?? err.message) : String(err));
}
