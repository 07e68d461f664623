// Real proxies on loopback for the proxy tests: Debian's squid (HTTP CONNECT, basic auth,
// an https:// listener, names it resolves from its own hosts file) and microsocks (SOCKS5
// with user and password), each started on a free 127.0.0.1 port with a generated config in
// a temp directory, and stopped by the test (or at exit). scripts/setup-proxies.sh installs them.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { canConnect, freePort } from '../../sandbox/control-plane/ports.js';
import { onExitCleanup, startProcess, type ManagedProcess } from '../../sandbox/control-plane/processes.js';
import { eventually } from './eventually.js';

export interface AccessLogEntry {
  /** squid's result code and HTTP status: "TCP_TUNNEL/200", "TCP_DENIED/407". */
  result: string;
  method: string;
  /** "host:port" for CONNECT, the whole URL otherwise. */
  url: string;
  user: string;
}

export interface Squid {
  /** http://127.0.0.1:<port> */
  readonly url: string;
  /** https://localhost:<port>, when started with a certificate. */
  readonly httpsUrl?: string;
  readonly port: number;
  /** squid writes a line when a transaction ends: a tunnel's when it is closed. */
  accessLog(): AccessLogEntry[];
  /** Waits until an entry matching `match` was written. */
  waitForEntry(what: string, match: (e: AccessLogEntry) => boolean): Promise<AccessLogEntry>;
  stop(): Promise<void>;
}

export interface SquidOptions {
  /** Names squid resolves itself (its hosts_file), e.g. { 'kube.hm-proxy.test': '127.0.0.1' }. */
  hosts?: Record<string, string>;
  /** Require these credentials (basic auth). */
  auth?: { user: string; password: string };
  /** Refuse tunnels to these domains (403). */
  deny?: string[];
  /** Also listen for TLS (an https:// proxy) with this certificate. */
  tls?: { certPath: string; keyPath: string };
}

function which(command: string): string | undefined {
  for (const dir of (process.env['PATH'] ?? '').split(path.delimiter).concat(['/usr/sbin', '/usr/bin'])) {
    const candidate = path.join(dir, command);
    if (fs.existsSync(candidate)) return candidate;
  }
  return undefined;
}

function requireCommand(command: string, pkg: string): string {
  const found = which(command);
  if (!found) throw new Error(`${command} is not installed: run scripts/setup-proxies.sh (Debian's ${pkg})`);
  return found;
}

async function waitListening(proc: ManagedProcess, port: number): Promise<void> {
  let exited: number | string | undefined;
  void proc.exited.then((code) => (exited = code));
  await eventually(
    `${proc.name} listens on 127.0.0.1:${port}`,
    async () => {
      if (exited !== undefined) throw new Error(`${proc.name} exited (${exited}):\n${proc.tail(20)}`);
      return canConnect(port);
    },
    30_000,
  );
}

function tempDir(prefix: string): { dir: string; remove: () => void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const remove = (): void => fs.rmSync(dir, { recursive: true, force: true });
  const forget = onExitCleanup(remove);
  return {
    dir,
    remove: () => {
      remove();
      forget();
    },
  };
}

export async function startSquid(options: SquidOptions = {}): Promise<Squid> {
  const squid = requireCommand('squid', 'squid');
  const { dir, remove } = tempDir('hm-squid-');
  // squid started as root runs as the proxy user, which must own its directory.
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'proxy'], { encoding: 'utf8' }).trim());
    fs.chownSync(dir, uid, -1);
  }
  const port = await freePort();
  const tlsPort = options.tls ? await freePort() : undefined;
  const hostsFile = path.join(dir, 'hosts');
  fs.writeFileSync(
    hostsFile,
    Object.entries(options.hosts ?? {})
      .map(([name, ip]) => `${ip} ${name}\n`)
      .join(''),
  );
  const lines = [
    `http_port 127.0.0.1:${port}`,
    ...(options.tls
      ? [`https_port 127.0.0.1:${tlsPort} tls-cert=${options.tls.certPath} tls-key=${options.tls.keyPath}`]
      : []),
    `pid_filename ${dir}/squid.pid`,
    `access_log stdio:${dir}/access.log`,
    `cache_log ${dir}/cache.log`,
    'cache_store_log none',
    'cache deny all',
    `coredump_dir ${dir}`,
    `hosts_file ${hostsFile}`,
    // Names not in hosts_file are not resolved (no DNS server on loopback): nothing leaves the machine.
    'dns_nameservers 127.0.0.1',
    'udp_incoming_address 127.0.0.1',
    'udp_outgoing_address 127.0.0.1',
    'pinger_enable off',
    'netdb_filename none',
    'icp_port 0',
    'htcp_port 0',
    'shutdown_lifetime 0 seconds',
    'logfile_rotate 0',
    'strip_query_terms off',
    ...(asRoot ? ['cache_effective_user proxy'] : []),
    ...(options.deny?.length
      ? [`acl forbidden dstdomain -n ${options.deny.join(' ')}`, 'http_access deny forbidden']
      : []),
  ];
  if (options.auth) {
    const hash = execFileSync('openssl', ['passwd', '-1', options.auth.password], {
      encoding: 'utf8',
    }).trim();
    fs.writeFileSync(path.join(dir, 'passwd'), `${options.auth.user}:${hash}\n`, { mode: 0o644 });
    lines.push(
      `auth_param basic program /usr/lib/squid/basic_ncsa_auth ${dir}/passwd`,
      'auth_param basic children 1 startup=1 idle=1',
      'auth_param basic realm harvester-machine-test',
      'acl authed proxy_auth REQUIRED',
      'http_access allow authed',
    );
  } else {
    lines.push('http_access allow localhost');
  }
  lines.push('http_access deny all');
  const config = path.join(dir, 'squid.conf');
  fs.writeFileSync(config, `${lines.join('\n')}\n`, { mode: 0o644 });
  const proc = startProcess('squid', squid, ['-N', '-f', config], path.join(dir, 'squid.out'));
  try {
    await waitListening(proc, port);
    if (tlsPort) await waitListening(proc, tlsPort);
  } catch (err) {
    await proc.stop();
    remove();
    throw err;
  }
  const accessLog = (): AccessLogEntry[] => {
    let text: string;
    try {
      text = fs.readFileSync(path.join(dir, 'access.log'), 'utf8');
    } catch {
      return [];
    }
    return text
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((line) => {
        const f = line.trim().split(/\s+/);
        return { result: f[3] ?? '', method: f[5] ?? '', url: f[6] ?? '', user: f[7] ?? '' };
      });
  };
  return {
    url: `http://127.0.0.1:${port}`,
    ...(tlsPort ? { httpsUrl: `https://localhost:${tlsPort}` } : {}),
    port,
    accessLog,
    async waitForEntry(what, match) {
      let found: AccessLogEntry | undefined;
      await eventually(
        `squid's access log has ${what} (it has: ${JSON.stringify(accessLog())})`,
        () => Promise.resolve((found = accessLog().find(match)) !== undefined),
        15_000,
      );
      return found as AccessLogEntry;
    },
    async stop() {
      await proc.stop();
      remove();
    },
  };
}

export interface Microsocks {
  /** socks5://<user>:<password>@127.0.0.1:<port> */
  readonly url: string;
  readonly port: number;
  /** The "connected to host:port" lines microsocks prints per tunnel. */
  connections(): string[];
  stop(): Promise<void>;
}

export async function startMicrosocks(auth: { user: string; password: string }): Promise<Microsocks> {
  const microsocks = requireCommand('microsocks', 'microsocks');
  const { dir, remove } = tempDir('hm-socks-');
  const port = await freePort();
  const logPath = path.join(dir, 'microsocks.log');
  const proc = startProcess(
    'microsocks',
    microsocks,
    ['-i', '127.0.0.1', '-p', String(port), '-u', auth.user, '-P', auth.password],
    logPath,
  );
  try {
    await waitListening(proc, port);
  } catch (err) {
    await proc.stop();
    remove();
    throw err;
  }
  return {
    url: `socks5://${auth.user}:${auth.password}@127.0.0.1:${port}`,
    port,
    connections: () => {
      try {
        return fs
          .readFileSync(logPath, 'utf8')
          .split('\n')
          .map((l) => /connected to (\S+)/.exec(l)?.[1])
          .filter((x): x is string => x !== undefined);
      } catch {
        return [];
      }
    },
    async stop() {
      await proc.stop();
      remove();
    },
  };
}

/**
 * Maps a name to 127.0.0.1 in /etc/hosts for the client's own lookups (a direct connection
 * to a non-loopback name), and removes exactly that line afterwards, also at exit. Only as
 * root; undefined otherwise (the caller skips).
 */
export function addHostsEntry(name: string): { remove: () => void } | undefined {
  const hosts = '/etc/hosts';
  try {
    fs.accessSync(hosts, fs.constants.W_OK);
  } catch {
    return undefined;
  }
  const line = `127.0.0.1 ${name} # harvester-machine test ${process.pid}`;
  // Appended and rewritten in place: in containers /etc/hosts is often a bind mount.
  const before = fs.readFileSync(hosts, 'utf8');
  fs.appendFileSync(hosts, `${before.endsWith('\n') || before === '' ? '' : '\n'}${line}\n`);
  let removed = false;
  const remove = (): void => {
    if (removed) return;
    removed = true;
    const now = fs.readFileSync(hosts, 'utf8');
    const kept = now.split('\n').filter((l) => l !== line);
    fs.writeFileSync(hosts, kept.join('\n'));
  };
  const forget = onExitCleanup(remove);
  return {
    remove: () => {
      remove();
      forget();
    },
  };
}
