// A guest cluster's own kube-apiserver, as cheap as a real one gets: no etcd of its own (it keeps
// its objects in another control plane's etcd, under its own --etcd-prefix, so nothing of one
// guest is seen by another or by the host), no kube-controller-manager (the sandbox plays the
// PV binder where it needs one), only the API groups a guest's Nodes, volumes and drains use,
// no watch cache, and every request allowed (the guest's admin is the only user). Its own CA,
// serving certificate and admin client certificate; the kubeconfig carries them inline, as the
// `<cluster>-kubeconfig` Secret Rancher writes does (docs/upstream/cluster-api.md#the-guest-clusters-kubeconfig).
// Measured on 2 shared cores: ready in about 4 s, about 200 MB resident (the full API set with
// RBAC and the watch cache: 8 s, 250 MB).
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { KubeClient } from '../../src/kube/client.js';
import { ensureControlPlaneBinaries } from './binaries.js';
import { ControlPlaneError, waitReady } from './control-plane.js';
import { recordSecret } from '../secret-ledger.js';
import { buildKubeconfig } from './kubeconfig.js';
import { createCa, createServiceAccountKeys, issueCert } from './pki.js';
import { freePort } from './ports.js';
import { onExitCleanup, startProcess, type ManagedProcess } from './processes.js';

/**
 * What a guest's nodes, its CSI driver's PersistentVolumes, Cluster API's node lookup and drain
 * and the apiserver's own bootstrap need (the admission plugins left on read RuntimeClasses and
 * PriorityClasses; leases and ServiceCIDRs are the apiserver's own).
 */
const GUEST_APIS = [
  'api/all=false',
  'api/v1=true',
  'apiregistration.k8s.io/v1=true',
  'apiextensions.k8s.io/v1=true',
  'authentication.k8s.io/v1=true',
  'authorization.k8s.io/v1=true',
  'coordination.k8s.io/v1=true',
  'networking.k8s.io/v1=true',
  'node.k8s.io/v1=true',
  'policy/v1=true',
  'scheduling.k8s.io/v1=true',
  'storage.k8s.io/v1=true',
].join(',');

export interface GuestApiserver {
  /** The guest cluster it serves, "namespace/name" of its provisioning Cluster. */
  readonly name: string;
  readonly server: string;
  /** Admin of the guest cluster (inline client certificate and CA). */
  readonly kubeconfig: string;
  /** A client for the kubeconfig, closed by stop(). */
  readonly admin: KubeClient;
  /** The kube-apiserver's process id (for its resident set). */
  readonly pid: number | undefined;
  /** How long it took to answer /readyz, ms. */
  readonly startMs: number;
  stop(): Promise<void>;
}

export async function startGuestApiserver(opts: {
  /** The guest cluster, for the directory, the etcd prefix and the kubeconfig's names. */
  name: string;
  /** The etcd it keeps its objects in (another control plane's: ControlPlane.etcdUrl). */
  etcdUrl: string;
  readyTimeoutMs?: number;
}): Promise<GuestApiserver> {
  const started = performance.now();
  const bins = ensureControlPlaneBinaries();
  const slug = opts.name.replace(/[^a-z0-9-]+/g, '-');
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), `hm-guest-${slug}-`));
  await fsp.chmod(dir, 0o700);
  const forgetCleanup = onExitCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  let proc: ManagedProcess | undefined;
  let admin: KubeClient | undefined;
  const stop = async (): Promise<void> => {
    admin?.close();
    await proc?.stop();
    await fsp.rm(dir, { recursive: true, force: true });
    forgetCleanup();
  };
  try {
    const pki = await createCa(path.join(dir, 'pki'), `guest-${slug}-ca`);
    const serving = await issueCert(pki, 'apiserver', { commonName: 'kube-apiserver' }, 'server');
    const adminCert = await issueCert(
      pki,
      'admin',
      { commonName: 'guest-admin', organization: 'system:masters' },
      'client',
    );
    const sa = await createServiceAccountKeys(pki);
    const port = await freePort();
    const server = `https://127.0.0.1:${port}`;
    // The key is the kubeconfig's secret (the rest is ordinary YAML every output holds).
    recordSecret(`guest cluster ${opts.name}'s admin client key`, adminCert.keyPem);
    const kubeconfig = buildKubeconfig({
      name: slug,
      server,
      caPem: pki.caPem,
      user: { clientCertPem: adminCert.certPem, clientKeyPem: adminCert.keyPem },
    });
    admin = KubeClient.fromKubeconfig(kubeconfig, {
      requestTimeoutMs: 10_000,
      retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 },
    });
    proc = startProcess(
      'kube-apiserver (guest)',
      bins.kubeApiserver,
      [
        '--advertise-address=127.0.0.1',
        '--bind-address=127.0.0.1',
        `--secure-port=${port}`,
        `--etcd-servers=${opts.etcdUrl}`,
        `--etcd-prefix=/guest/${slug}`,
        `--cert-dir=${path.join(dir, 'apiserver-certs')}`,
        `--tls-cert-file=${serving.certPath}`,
        `--tls-private-key-file=${serving.keyPath}`,
        `--client-ca-file=${pki.caCert}`,
        `--service-account-issuer=${server}/`,
        `--service-account-key-file=${sa.publicKey}`,
        `--service-account-signing-key-file=${sa.privateKey}`,
        '--authorization-mode=AlwaysAllow',
        `--runtime-config=${GUEST_APIS}`,
        '--watch-cache=false',
        '--disable-admission-plugins=ServiceAccount,MutatingAdmissionWebhook,ValidatingAdmissionWebhook,ValidatingAdmissionPolicy',
        '--service-cluster-ip-range=10.0.0.0/24',
        '--enable-priority-and-fairness=false',
        '--profiling=false',
        '--v=1',
      ],
      path.join(dir, 'kube-apiserver.log'),
    );
    await waitReady(admin, proc, opts.readyTimeoutMs ?? 90_000);
    const startMs = performance.now() - started;
    const client = admin;
    const pid = proc.child.pid;
    return { name: opts.name, server, kubeconfig, admin: client, pid, startMs, stop };
  } catch (err) {
    await stop();
    throw err instanceof ControlPlaneError
      ? err
      : new ControlPlaneError(
          `guest apiserver ${opts.name}: ${err instanceof Error ? err.message : String(err)}`,
        );
  }
}

/** Resident set of a process in MiB (Linux /proc), undefined where it cannot be read. */
export function residentMiB(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = /VmRSS:\s+(\d+) kB/.exec(status)?.[1];
    return kib ? Math.round(Number(kib) / 1024) : undefined;
  } catch {
    return undefined;
  }
}
