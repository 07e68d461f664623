// The guest OS, as far as rancher-machine's `start` and `restart` reach it: after the
// driver reports Running they wait for SSH (`exit 0`), detect the OS (`cat
// /etc/os-release`) and wait for Docker's port (netstat). Rancher itself never runs
// these commands (it only creates and removes), and the sandbox's VMs have no guest, so an
// `ssh` first on PATH plays the guest: rancher-machine uses the external ssh client when
// one is on PATH. It records every call, which shows what the plugin answered to
// GetSSHHostname/GetSSHPort/GetSSHKeyPath/GetSSHUsername.
import fs from 'node:fs';
import path from 'node:path';

export interface SshCall {
  /** user@host as rancher-machine built it from GetSSHUsername and GetSSHHostname. */
  destination: string;
  port: string | undefined;
  identity: string | undefined;
  command: string;
}

const OS_RELEASE = 'NAME="Ubuntu"\nVERSION_ID="24.04"\nID=ubuntu\nID_LIKE=debian\n';
const NETSTAT =
  'Active Internet connections (only servers)\n' +
  'Proto Recv-Q Send-Q Local Address           Foreign Address         State\n' +
  'tcp        0      0 0.0.0.0:2376            0.0.0.0:*               LISTEN\n';

/** Writes `ssh` into binDir; calls are logged (one JSON array of argv per line) to logFile. */
export function installGuestSsh(binDir: string, logFile: string): void {
  if (/['\n]/.test(logFile)) throw new Error(`unusable log path ${logFile}`);
  const script = `#!/bin/sh
# Guest stand-in for the interop tests (test/interop/support/guest-ssh.ts).
nul_words() { for a in "$@"; do printf '%s\\0' "$a"; done; }
nul_words "$@" | od -An -v -tx1 | tr -d ' \\n' >> '${logFile}'
printf '\\n' >> '${logFile}'
for last; do :; done
case "$last" in
  "exit 0") exit 0 ;;
  "cat /etc/os-release") printf '%s' '${OS_RELEASE}' ;;
  *"netstat -tln"*) printf '%s' '${NETSTAT}' ;;
  *) echo "guest stand-in: no answer for: $last" >&2; exit 127 ;;
esac
`;
  fs.mkdirSync(binDir, { recursive: true });
  fs.writeFileSync(path.join(binDir, 'ssh'), script, { mode: 0o755 });
}

/** The calls so far (argv is logged as hex of NUL-separated words: no quoting problems). */
export function guestSshCalls(logFile: string): SshCall[] {
  if (!fs.existsSync(logFile)) return [];
  return fs
    .readFileSync(logFile, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((hex) => {
      const argv = Buffer.from(hex, 'hex').toString('utf8').split('\0').slice(0, -1);
      const valueOf = (flag: string): string | undefined => {
        const i = argv.indexOf(flag);
        return i >= 0 ? argv[i + 1] : undefined;
      };
      return {
        destination: argv.find((a) => /^[^-][^\s]*@[^\s]+$/.test(a)) ?? '',
        port: valueOf('-p'),
        identity: valueOf('-i'),
        command: argv[argv.length - 1] ?? '',
      };
    });
}
