// The command lines of the control plane's components: pure decisions from the ports, paths and
// certificates the control plane has chosen, apart from starting anything.
import path from 'node:path';

/** The common name kube-apiserver's aggregator presents to aggregated API servers. */
export const AGGREGATOR_CLIENT = 'front-proxy-client';

const CONTROLLERS = [
  'garbage-collector-controller',
  'namespace-controller',
  'persistentvolumeclaim-protection-controller',
  // Binds claims to the volumes a provisioner makes (Longhorn's stand-in plays the provisioner).
  'persistentvolume-binder-controller',
  'persistentvolume-protection-controller',
  // Every namespace's `default` ServiceAccount, which the ServiceAccount admission plugin needs to
  // admit a pod (and then mounts its token: KubeVirt counts that volume on attachment pods).
  'serviceaccount-controller',
].join(',');

/** The apiserver's URL on its loopback address (IPv6 in brackets). */
export function apiserverUrl(bindAddress: '127.0.0.1' | '::1', port: number): string {
  return bindAddress === '::1' ? `https://[::1]:${port}` : `https://127.0.0.1:${port}`;
}

/** Where kube-apiserver listens, what it stores in, and the files it authenticates with. */
export interface ApiserverSetup {
  name: string;
  dir: string;
  server: string;
  bindAddress: '127.0.0.1' | '::1';
  port: number;
  etcdUrl: string;
  servingCert: { certPath: string; keyPath: string };
  clientCaFile: string;
  serviceAccount: { publicKey: string; privateKey: string };
  /** The aggregation layer's CA and the client certificate the apiserver proxies with. */
  requestheaderCaFile: string;
  aggregatorCert: { certPath: string; keyPath: string };
}

/** kube-apiserver's flags: RBAC, bootstrap tokens and the aggregation layer on. */
export function apiserverFlags(s: ApiserverSetup): string[] {
  return [
    '--advertise-address=127.0.0.1',
    `--bind-address=${s.bindAddress}`,
    `--secure-port=${s.port}`,
    `--etcd-servers=${s.etcdUrl}`,
    `--etcd-prefix=/${s.name}`,
    `--cert-dir=${path.join(s.dir, 'apiserver-certs')}`,
    `--tls-cert-file=${s.servingCert.certPath}`,
    `--tls-private-key-file=${s.servingCert.keyPath}`,
    `--client-ca-file=${s.clientCaFile}`,
    `--service-account-issuer=${s.server}/`,
    `--service-account-key-file=${s.serviceAccount.publicKey}`,
    `--service-account-signing-key-file=${s.serviceAccount.privateKey}`,
    '--authorization-mode=RBAC',
    '--service-cluster-ip-range=10.0.0.0/24',
    '--allow-privileged=true',
    '--enable-bootstrap-token-auth=true',
    `--requestheader-client-ca-file=${s.requestheaderCaFile}`,
    `--requestheader-allowed-names=${AGGREGATOR_CLIENT}`,
    '--requestheader-username-headers=X-Remote-User',
    '--requestheader-group-headers=X-Remote-Group',
    '--requestheader-extra-headers-prefix=X-Remote-Extra-',
    `--proxy-client-cert-file=${s.aggregatorCert.certPath}`,
    `--proxy-client-key-file=${s.aggregatorCert.keyPath}`,
    '--enable-priority-and-fairness=false',
    '--profiling=false',
    '--v=1',
  ];
}

/** kube-controller-manager's flags: the sandbox's controllers, no leader election, no serving port. */
export function controllerManagerFlags(kubeconfig: string): string[] {
  return [
    `--kubeconfig=${kubeconfig}`,
    `--controllers=${CONTROLLERS}`,
    '--leader-elect=false',
    '--secure-port=0',
    '--concurrent-gc-syncs=5',
    // Each controller acts as its own service account (kube-system/<controller>, tokens
    // from the TokenRequest API), as RKE2 runs it under Harvester: the garbage collector's
    // deletes then come from system:serviceaccount:kube-system:generic-garbage-collector,
    // the user Harvester's PVC webhook lets pass.
    '--use-service-account-credentials=true',
    '--v=1',
  ];
}

/** kube-scheduler's flags: one kubeconfig for everything, no leader election, no serving port. */
export function schedulerFlags(kubeconfig: string): string[] {
  return [
    `--kubeconfig=${kubeconfig}`,
    `--authentication-kubeconfig=${kubeconfig}`,
    `--authorization-kubeconfig=${kubeconfig}`,
    '--leader-elect=false',
    '--secure-port=0',
    '--v=1',
  ];
}
