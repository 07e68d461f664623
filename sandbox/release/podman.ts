// Runs the controller image with real podman as a kubelet would run a container of a
// rendered pod spec: the user, read-only root, dropped capabilities, no privilege
// escalation, the memory limit, emptyDir volumes, env (fieldRefs resolved), command and
// args, and the ServiceAccount token, CA and namespace at the in-cluster path. Host
// network, so KUBERNETES_SERVICE_HOST=127.0.0.1 reaches the sandbox's apiserver.
// Podman's storage is in the shared cache (an image loaded once is reused).
// On this machine kind podman needs runc (crun fails in cgroups hybrid mode), cgroupfs,
// and rlimits no higher than the current ones (CAP_SYS_RESOURCE is not there to raise them).
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { cacheRoot } from '../repo.js';

const run = promisify(execFile);
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

export function podmanGlobalArgs(): string[] {
  const root = path.join(cacheRoot(), 'podman');
  const runRoot = path.join(
    process.env.XDG_RUNTIME_DIR ?? os.tmpdir(),
    `harvester-machine-podman-${process.getuid?.() ?? 0}`,
  );
  return [
    '--root',
    path.join(root, 'storage'),
    '--runroot',
    runRoot,
    '--tmpdir',
    path.join(runRoot, 'libpod'),
    '--runtime',
    'runc',
    '--cgroup-manager',
    'cgroupfs',
    '--events-backend',
    'none',
  ];
}

export async function podman(args: string[]): Promise<string> {
  try {
    return (await run('podman', [...podmanGlobalArgs(), ...args], { maxBuffer: 16 * 1024 * 1024 })).stdout;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`podman ${args[0] ?? ''} failed: ${e.stderr?.trim() || e.message}`, { cause: err });
  }
}

/** The image's ID (its config digest) from an OCI archive, read with tar. */
export async function imageIdOf(archive: string): Promise<string> {
  const read = async (member: string): Promise<string> =>
    (await run('tar', ['-xOf', archive, member], { maxBuffer: 4 * 1024 * 1024 })).stdout;
  const index = JSON.parse(await read('./index.json')) as { manifests: Array<{ digest: string }> };
  const manifestDigest = index.manifests[0]?.digest ?? '';
  const manifest = JSON.parse(await read(`./blobs/sha256/${manifestDigest.slice('sha256:'.length)}`)) as {
    config: { digest: string };
  };
  return manifest.config.digest.slice('sha256:'.length);
}

/** `podman load` unless podman's storage already holds this archive's image; resolves with its ID. */
export async function loadImage(archive: string): Promise<string> {
  const id = await imageIdOf(archive);
  const exists = await podman(['image', 'exists', id]).then(
    () => true,
    () => false,
  );
  if (!exists) {
    await podman(['load', '--quiet', '--input', archive]);
    // Images of older sources (their tag moved to this one) are 136 MB each: drop those
    // unused for an hour, so that another checkout's run of its own image is never hit.
    await podman(['image', 'prune', '--force', '--filter', 'until=1h']).catch(() => undefined);
  }
  return id;
}

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { fieldRef?: { fieldPath: string } };
}
interface Container {
  name: string;
  command?: string[];
  args?: string[];
  env?: EnvVar[];
  resources?: { limits?: { memory?: string } };
  securityContext?: {
    runAsUser?: number;
    runAsGroup?: number;
    readOnlyRootFilesystem?: boolean;
    allowPrivilegeEscalation?: boolean;
    capabilities?: { drop?: string[]; add?: string[] };
  };
  volumeMounts?: Array<{ name: string; mountPath: string }>;
}
export interface PodSpec {
  securityContext?: { runAsUser?: number; runAsGroup?: number };
  containers: Container[];
  volumes?: Array<{ name: string; emptyDir?: { medium?: string; sizeLimit?: string } }>;
}

export interface ServiceAccountFiles {
  token: string;
  caPem: string;
  namespace: string;
}

export interface RunAsPodOptions {
  imageId: string;
  pod: PodSpec;
  podMeta: { name: string; namespace: string };
  serviceAccount: ServiceAccountFiles;
  apiserver: { host: string; port: number };
  /** Environment set over the pod spec's (the tests bind metrics to loopback: host network). */
  envOverrides?: Record<string, string>;
  /** Arguments instead of the container's args. */
  args?: string[];
}

export interface RunningContainer {
  name: string;
  /** The `podman run` argv (without the global flags), to show in a failure. */
  argv: string[];
  output(): string;
  /** Resolves with the container's exit code. */
  exited: Promise<number | null>;
  stop(): Promise<void>;
}

/** Kubernetes quantities as podman takes them: 256Mi -> 256m, 1Gi -> 1g. */
function podmanSize(quantity: string): string {
  const m = /^(\d+)(Ki|Mi|Gi)?$/.exec(quantity);
  if (!m) throw new Error(`cannot translate the quantity "${quantity}" for podman`);
  return `${m[1]}${{ Ki: 'k', Mi: 'm', Gi: 'g' }[m[2] ?? ''] ?? 'b'}`;
}

type RunArgsOptions = RunAsPodOptions & { name: string; saDir: string };

/** securityContext and resources as podman flags. */
function securityArgs(container: Container, pod: PodSpec): string[] {
  const sc = container.securityContext ?? {};
  const uid = sc.runAsUser ?? pod.securityContext?.runAsUser;
  const gid = sc.runAsGroup ?? pod.securityContext?.runAsGroup;
  const argv: string[] = [];
  if (uid !== undefined) argv.push('--user', gid !== undefined ? `${uid}:${gid}` : String(uid));
  if (sc.readOnlyRootFilesystem) argv.push('--read-only', '--read-only-tmpfs=false');
  if (sc.allowPrivilegeEscalation === false) argv.push('--security-opt', 'no-new-privileges');
  for (const cap of sc.capabilities?.drop ?? []) argv.push('--cap-drop', cap);
  for (const cap of sc.capabilities?.add ?? []) argv.push('--cap-add', cap);
  const memory = container.resources?.limits?.memory;
  if (memory) argv.push('--memory', podmanSize(memory));
  return argv;
}

/** emptyDir volumes as tmpfs mounts, and the ServiceAccount files at the in-cluster path. */
function volumeArgs(container: Container, opts: RunArgsOptions): string[] {
  const argv: string[] = [];
  for (const mount of container.volumeMounts ?? []) {
    const volume = opts.pod.volumes?.find((v) => v.name === mount.name);
    if (!volume?.emptyDir) throw new Error(`volume ${mount.name}: only emptyDir volumes are translated`);
    const size = volume.emptyDir.sizeLimit ? `,size=${podmanSize(volume.emptyDir.sizeLimit)}` : '';
    argv.push('--tmpfs', `${mount.mountPath}:rw,nosuid,nodev,mode=1777${size}`);
  }
  argv.push('--volume', `${opts.saDir}:${SERVICE_ACCOUNT_DIR}:ro`);
  return argv;
}

/** The container's env with fieldRefs resolved, the in-cluster service address, then the overrides. */
function envArgs(container: Container, opts: RunArgsOptions): string[] {
  const env = new Map<string, string>();
  const fields: Record<string, string> = {
    'metadata.name': opts.podMeta.name,
    'metadata.namespace': opts.podMeta.namespace,
  };
  for (const e of container.env ?? []) {
    const fieldPath = e.valueFrom?.fieldRef?.fieldPath;
    const value = fieldPath !== undefined ? fields[fieldPath] : e.value;
    if (value === undefined) throw new Error(`env ${e.name}: cannot resolve ${JSON.stringify(e.valueFrom)}`);
    env.set(e.name, value);
  }
  env.set('KUBERNETES_SERVICE_HOST', opts.apiserver.host);
  env.set('KUBERNETES_SERVICE_PORT', String(opts.apiserver.port));
  for (const [k, v] of Object.entries(opts.envOverrides ?? {})) env.set(k, v);
  return [...env].flatMap(([k, v]) => ['--env', `${k}=${v}`]);
}

/** The `podman run` arguments for the pod's first container, as a kubelet would run it. */
export function podmanRunArgs(opts: RunArgsOptions): string[] {
  const container = opts.pod.containers[0];
  if (!container) throw new Error('the pod spec has no container');
  return [
    'run',
    '--rm',
    '--name',
    opts.name,
    '--network',
    'host',
    '--ulimit',
    'nofile=1024:1024',
    '--ulimit',
    'nproc=4096:4096',
    ...securityArgs(container, opts.pod),
    ...volumeArgs(container, opts),
    ...envArgs(container, opts),
    ...(container.command ? ['--entrypoint', JSON.stringify(container.command)] : []),
    opts.imageId,
    ...(opts.args ?? container.args ?? []),
  ];
}

/** Starts the container; its output is collected. Stop it (or let it exit) before the test ends. */
export function runAsPod(opts: RunAsPodOptions): RunningContainer {
  const name = `hm-${opts.podMeta.name}-${Math.random().toString(36).slice(2, 8)}`;
  // The files only the pod's user may read, as the kubelet's projected volume.
  const saDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-sa-'));
  const container = opts.pod.containers[0];
  const uid = container?.securityContext?.runAsUser ?? opts.pod.securityContext?.runAsUser ?? 0;
  const gid = container?.securityContext?.runAsGroup ?? opts.pod.securityContext?.runAsGroup ?? uid;
  for (const [file, content] of Object.entries({
    token: opts.serviceAccount.token,
    'ca.crt': opts.serviceAccount.caPem,
    namespace: opts.serviceAccount.namespace,
  })) {
    fs.writeFileSync(path.join(saDir, file), content, { mode: 0o600 });
    fs.chownSync(path.join(saDir, file), uid, gid);
  }
  fs.chownSync(saDir, uid, gid);
  const argv = podmanRunArgs({ ...opts, name, saDir });
  const child: ChildProcess = spawn('podman', [...podmanGlobalArgs(), ...argv], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (output += d));
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (output += d));
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => {
      fs.rmSync(saDir, { recursive: true, force: true });
      resolve(code);
    });
    child.once('error', (err) => {
      output += `\n${err.message}`;
      resolve(null);
    });
  });
  return {
    name,
    argv,
    output: () => output,
    exited,
    async stop() {
      await podman(['rm', '--force', '--time', '5', name]).catch(() => undefined);
      await exited;
    },
  };
}
