// What a running `sandbox up` leaves for the commands run beside it: state.json and the
// kubeconfig files in its state directory (0700; files 0600). A command reads them, talks
// to the sandbox's apiservers with its own clients, and never needs the `up` process itself.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { KubeClient } from '../../src/kube/client.js';

/** The export lines `up` and `env` print, and the files they name. */
export const KUBECONFIG_FILES = {
  HARVESTER_KUBECONFIG: 'harvester.kubeconfig',
  HARVESTER_VIA_RANCHER_KUBECONFIG: 'harvester-via-rancher.kubeconfig',
  HARVESTER_ADMIN_KUBECONFIG: 'harvester-admin.kubeconfig',
  RANCHER_KUBECONFIG: 'rancher.kubeconfig',
} as const;
export type KubeconfigVariable = keyof typeof KUBECONFIG_FILES;

export interface SessionState {
  pid: number;
  status: 'starting' | 'up';
  /** The control planes' temp directories (gone once stopped). */
  dirs?: string[];
  proxyUrl?: string;
  /** The proxy's CA (public): a renewed credential's kubeconfig carries it. */
  proxyCaPem?: string;
  clusterId?: string;
  clusterName?: string;
  cloudCredential?: { namespace: string; name: string };
  seeds?: { namespace: string; image: string; network: string; keyPair: string };
  /** Where Rancher's provisioning clusters and machines live (fleet-default). */
  fleetNamespace?: string;
}

export function stateDirFrom(args: readonly string[], env = process.env): string {
  const i = args.indexOf('--state-dir');
  const given =
    i >= 0 ? args[i + 1] : args.find((a) => a.startsWith('--state-dir='))?.slice('--state-dir='.length);
  return path.resolve(
    given ??
      env['HARVESTER_MACHINE_SANDBOX_DIR'] ??
      path.join(os.homedir(), '.local', 'state', 'harvester-machine', 'sandbox'),
  );
}

export function readState(dir: string): SessionState | undefined {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, 'state.json'), 'utf8')) as SessionState;
  } catch {
    return undefined;
  }
}

export function writePrivate(file: string, content: string): void {
  fs.writeFileSync(file, content, { mode: 0o600 });
  fs.chmodSync(file, 0o600); // an existing file keeps its mode otherwise
}

export function writeState(dir: string, state: SessionState): void {
  writePrivate(path.join(dir, 'state.json'), JSON.stringify(state, null, 2));
}

const shellQuote = (s: string): string => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

export function exportLines(dir: string): string[] {
  return (Object.entries(KUBECONFIG_FILES) as Array<[KubeconfigVariable, string]>).map(
    ([variable, file]) => `export ${variable}=${shellQuote(path.join(dir, file))}`,
  );
}

/** A running sandbox as a command sees it. */
export interface Session {
  dir: string;
  state: Required<Omit<SessionState, 'dirs'>> & Pick<SessionState, 'dirs'>;
  harvester: KubeClient;
  rancher: KubeClient;
  kubeconfig(variable: KubeconfigVariable): string;
  close(): void;
}

export class NoSandboxError extends Error {}

/** Waits (up to `waitMs`) for a starting sandbox; fails when none runs. */
export async function openSession(dir: string, waitMs = 0): Promise<Session> {
  const deadline = Date.now() + waitMs;
  let state = readState(dir);
  while (state?.status !== 'up' && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 250));
    state = readState(dir);
  }
  if (!state)
    throw new NoSandboxError(
      `no sandbox is running (no state in ${dir}): start one with: npm run sandbox up`,
    );
  if (state.status !== 'up')
    throw new NoSandboxError(`the sandbox in ${dir} is still starting (pid ${state.pid})`);
  const read = (variable: KubeconfigVariable): string =>
    fs.readFileSync(path.join(dir, KUBECONFIG_FILES[variable]), 'utf8');
  const harvester = KubeClient.fromKubeconfig(read('HARVESTER_ADMIN_KUBECONFIG'));
  const rancher = KubeClient.fromKubeconfig(read('RANCHER_KUBECONFIG'));
  return {
    dir,
    state: state as Session['state'],
    harvester,
    rancher,
    kubeconfig: read,
    close() {
      harvester.close();
      rancher.close();
    },
  };
}
