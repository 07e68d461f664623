// rancher-machine's store as files (<store>/machines/<name>/config.json) and as Rancher
// keeps it between jobs (the `<m>-machine-state` Secret: a gzip'd tar of the machines
// directory under absolute paths); and a config.json as the Go driver's plugin leaves it.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { goDriverConfig } from '../../support/go-driver-config.js';

export { goDriverConfig };
import type { KubeClient } from '../../../src/kube/client.js';
import { Resources, type KubeObject } from '../../../src/kube/resources.js';

/** The libmachine Host document (commands/../libmachine/host.Host, ConfigVersion 3). */
export interface HostDocument {
  ConfigVersion: number;
  Driver: Record<string, unknown>;
  DriverName: string;
  HostOptions: Record<string, unknown>;
  Name: string;
}

export function machineDir(store: string, name: string): string {
  return path.join(store, 'machines', name);
}

export function readHostDocument(store: string, name: string): HostDocument {
  return JSON.parse(
    fs.readFileSync(path.join(machineDir(store, name), 'config.json'), 'utf8'),
  ) as HostDocument;
}

/**
 * HostOptions of a host that `create` provisioned over SSH (no --custom-install-script), as
 * RKE1 node templates did: engine, swarm and auth options filled in. (A host created the
 * way RKE2 provisioning does it has those three null: rancher-machine's create clears them.)
 */
export function provisionedHostOptions(store: string, name: string): Record<string, unknown> {
  const certs = path.join(store, 'certs');
  const dir = machineDir(store, name);
  return {
    Driver: '',
    Memory: 0,
    Disk: 0,
    CustomInstallScript: '',
    HostnameOverride: '',
    MachineOS: '',
    EngineOptions: {
      ArbitraryFlags: [],
      Dns: null,
      GraphDir: '',
      Env: [],
      Ipv6: false,
      InsecureRegistry: [],
      Labels: [],
      LogLevel: '',
      StorageDriver: '',
      SelinuxEnabled: false,
      TlsVerify: true,
      RegistryMirror: [],
      InstallURL: 'https://get.docker.com',
    },
    SwarmOptions: {
      IsSwarm: false,
      Address: '',
      Discovery: '',
      Agent: false,
      Master: false,
      Host: 'tcp://0.0.0.0:3376',
      Image: 'swarm:latest',
      Strategy: 'spread',
      Heartbeat: 0,
      Overcommit: 0,
      ArbitraryFlags: [],
      ArbitraryJoinFlags: [],
      Env: null,
      IsExperimental: false,
    },
    AuthOptions: {
      CertDir: certs,
      CaCertPath: path.join(certs, 'ca.pem'),
      CaPrivateKeyPath: path.join(certs, 'ca-key.pem'),
      CaCertRemotePath: '',
      ServerCertPath: path.join(dir, 'server.pem'),
      ServerKeyPath: path.join(dir, 'server-key.pem'),
      ClientKeyPath: path.join(certs, 'key.pem'),
      ServerCertRemotePath: '',
      ServerKeyRemotePath: '',
      ClientCertPath: path.join(certs, 'cert.pem'),
      ServerCertSANs: [],
      StorePath: dir,
    },
  };
}

/** Writes config.json as rancher-machine's filestore does: MarshalIndent with 4 spaces, mode 0600. */
export function writeHostDocument(store: string, host: HostDocument): string {
  const dir = machineDir(store, host.Name);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = path.join(dir, 'config.json');
  fs.writeFileSync(file, JSON.stringify(host, null, 4), { mode: 0o600 });
  return file;
}

// ---- the machine-state Secret ----

export const MACHINE_STATE_KEY = 'extractedConfig';

/** The empty Secret Rancher creates before the create job (rancher-machine only updates it). */
export async function createMachineStateSecret(
  rancher: KubeClient,
  namespace: string,
  name: string,
): Promise<void> {
  if (!(await rancher.find(Resources.namespace, { name: namespace })))
    await rancher.create<KubeObject>(Resources.namespace, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: namespace },
    });
  await rancher.create<KubeObject>(Resources.secret, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace },
    type: 'rke.cattle.io/machine-state',
  } as KubeObject);
}

/** The tar.gz in the Secret, undefined when rancher-machine never saved one. */
export async function machineStateArchive(
  rancher: KubeClient,
  namespace: string,
  name: string,
): Promise<Buffer | undefined> {
  const secret = await rancher.get<KubeObject & { data?: Record<string, string> }>(Resources.secret, {
    namespace,
    name,
  });
  const b64 = secret.data?.[MACHINE_STATE_KEY];
  return b64 === undefined ? undefined : Buffer.from(b64, 'base64');
}

function tar(args: string[], input: Buffer): string {
  const result = spawnSync('tar', args, { input, encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
  if (result.status !== 0) throw new Error(`tar ${args.join(' ')} failed: ${result.stderr}`);
  return result.stdout;
}

/** Entry names of the archive (the absolute paths rancher-machine wrote). */
export function archiveEntries(archive: Buffer): string[] {
  return tar(['-tzf', '-'], archive)
    .split('\n')
    .filter((l) => l !== '');
}

export function archiveFile(archive: Buffer, entry: string): string {
  return tar(['-xzOf', '-', entry], archive);
}
