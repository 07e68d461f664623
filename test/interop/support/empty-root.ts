// An empty root filesystem, as Rancher's driver jail or a FROM scratch image gives the
// executable: a directory holding only the files a test puts there, entered with chroot as
// user 1000 inside a mount namespace of its own (unshare), with /tmp the only writable
// place (a fresh tmpfs, or a host directory bind-mounted when state must outlive one
// command) and /proc mounted only when asked. The network namespace is the host's, so
// 127.0.0.1 reaches the sandbox. Needs root (chroot, mounts): see emptyRootSkipReason().
// A PID namespace ties the command's life to the host-side process: the namespace's init is
// a root shell that unshare kills when it dies, and then the kernel kills everything in it
// (the command itself loses the parent-death signal when chroot drops to user 1000).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const ROOT_USER = 1000;

export interface RootRun {
  /** /tmp: a fresh tmpfs (default), a host directory bind-mounted, or none (read-only, root's). */
  tmp?: 'tmpfs' | { bind: string } | 'none';
  /** Mount /proc (default: no /proc at all). */
  proc?: boolean;
  /** Bind the host's /dev/null (rancher-machine gives it to its plugins as stdin). */
  devNull?: boolean;
  /** The whole environment of the command inside (default: empty). */
  env?: Record<string, string>;
}

export interface RootCommand {
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
}

function onPath(tool: string): string | undefined {
  for (const dir of (process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin').split(path.delimiter)) {
    const file = path.join(dir, tool);
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return file;
    } catch {
      // next
    }
  }
  return undefined;
}

/** Why the empty-root tests cannot run here, or false. */
export function emptyRootSkipReason(): string | false {
  if (process.getuid?.() !== 0)
    return 'an empty root needs root here (chroot, and mounts in a mount namespace)';
  const missing = ['unshare', 'chroot', 'mount', 'env'].filter((t) => !onPath(t));
  return missing.length > 0 ? `an empty root needs ${missing.join(', ')} (util-linux, coreutils)` : false;
}

export class EmptyRoot {
  readonly dir: string;

  constructor(prefix: string) {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), `${prefix}-`));
    fs.chmodSync(this.dir, 0o755);
    fs.mkdirSync(path.join(this.dir, 'tmp'), { mode: 0o755 });
  }

  /** Puts a host file at `inside` (an absolute path in the root), by hard link or copy. */
  add(file: string, inside: string, mode = 0o755): string {
    const target = path.join(this.dir, inside);
    fs.mkdirSync(path.dirname(target), { recursive: true, mode: 0o755 });
    try {
      fs.linkSync(file, target);
    } catch {
      fs.copyFileSync(file, target);
      fs.chmodSync(target, mode);
    }
    return inside;
  }

  /** Writes a file at `inside`, readable by the root's user. */
  write(inside: string, content: string): string {
    const target = path.join(this.dir, inside);
    fs.mkdirSync(path.dirname(target), { recursive: true, mode: 0o755 });
    fs.writeFileSync(target, content, { mode: 0o644 });
    return inside;
  }

  /** The host command that runs argv (argv[0] a path inside the root) as user 1000 in the root. */
  command(argv: readonly string[], run: RootRun = {}): RootCommand {
    const steps = ['set -e'];
    const tmp = run.tmp ?? 'tmpfs';
    if (tmp === 'tmpfs') steps.push('mount -t tmpfs -o mode=1777,size=512m tmpfs "$ROOT/tmp"');
    else if (tmp !== 'none') steps.push(`mount --bind ${JSON.stringify(tmp.bind)} "$ROOT/tmp"`);
    if (run.proc) steps.push('mkdir -p "$ROOT/proc"', 'mount -t proc proc "$ROOT/proc"');
    if (run.devNull)
      steps.push('mkdir -p "$ROOT/dev"', 'touch "$ROOT/dev/null"', 'mount --bind /dev/null "$ROOT/dev/null"');
    // Not exec: this shell stays the namespace's init while the command runs.
    steps.push('"$@"', 'exit $?');
    const env = Object.entries(run.env ?? {}).map(([k, v]) => `${k}=${v}`);
    return {
      command: onPath('unshare') ?? 'unshare',
      // --kill-child: killing unshare (as a test does on failure) kills the namespace's init.
      args: [
        '--mount',
        '--pid',
        '--fork',
        '--kill-child',
        '--',
        'sh',
        '-c',
        steps.join('\n'),
        'sh',
        onPath('env') ?? 'env',
        '-i',
        ...env,
        onPath('chroot') ?? 'chroot',
        `--userspec=${ROOT_USER}:${ROOT_USER}`,
        this.dir,
        ...argv,
      ],
      env: { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin', ROOT: this.dir },
    };
  }

  /** Runs argv in the root to its end (killed after timeoutMs). */
  run(
    argv: readonly string[],
    run: RootRun = {},
    timeoutMs = 60_000,
  ): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const { command, args, env } = this.command(argv, run);
    return new Promise((resolve, reject) => {
      const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      child.once('error', reject);
      child.once('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      });
    });
  }

  /** A host directory for `tmp: { bind }`, owned by the root's user, mode 0700. */
  userDir(name: string): string {
    const dir = path.join(`${this.dir}-state`, name);
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    fs.chownSync(dir, ROOT_USER, ROOT_USER);
    return dir;
  }

  remove(): void {
    fs.rmSync(this.dir, { recursive: true, force: true });
    fs.rmSync(`${this.dir}-state`, { recursive: true, force: true });
  }
}

/**
 * The cache directory names of an executable's parts ("runtime-<20 hex>", "app-<20 hex>"),
 * read from its payload index as the launcher reads it (launcher/payload): the index is JSON
 * before a trailer of its length (8 bytes, little-endian) and "HMPAYLD1".
 */
export function payloadDirNames(executable: Buffer): { runtime: string; app: string } {
  const magic = executable.subarray(executable.length - 8).toString('latin1');
  if (magic !== 'HMPAYLD1') throw new Error('not a packed executable');
  const length = Number(executable.readBigUInt64LE(executable.length - 16));
  const index = JSON.parse(
    executable.subarray(executable.length - 16 - length, executable.length - 16).toString('utf8'),
  ) as { parts: Array<{ name: string; sha256: string }> };
  const dir = (name: string): string => {
    const part = index.parts.find((p) => p.name === name);
    if (!part) throw new Error(`no ${name} part`);
    return `${name}-${part.sha256.slice(0, 20)}`;
  };
  return { runtime: dir('runtime'), app: dir('app') };
}

/** Every path under dir (not dir itself), depth first. */
export function walk(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? [p, ...walk(p)] : [p];
  });
}
