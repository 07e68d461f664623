// A guest cluster's apiserver as a hostile tenant can make it answer, scripted (a guest's
// apiserver is its admins': what it answers is the point, not how it stores it). One HTTP
// server on 127.0.0.1, one guest per path prefix (a kubeconfig's server may carry a path):
//   /many     200,000 PVs of the Harvester CSI driver, in honest pages of the limit asked for;
//   /huge     one list answer of some 58 MB whatever the limit (about 2 MB gzipped, sent so when asked);
//   /pages    list pages that never end: one PV and a new continue token each;
//   /watch    an empty list, then a watch that streams new PVs for as long as it is read.
// Every request is counted by guest and kind (list, watch), and the events streamed too.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';

export const HOSTILE_MODES = ['many', 'huge', 'pages', 'watch'] as const;
export type HostileMode = (typeof HOSTILE_MODES)[number];

const DRIVER = 'driver.harvesterhci.io';
const MANY = 200_000;

/** A PV as a guest's kube-controller-manager makes it for a Harvester volume, with some bulk. */
function pv(i: number, bulk = 0): unknown {
  const name = `pvc-${i.toString(16).padStart(8, '0')}-0000-4000-8000-hostile000000`;
  return {
    metadata: {
      name,
      uid: `u-${i}`,
      resourceVersion: String(1000 + i),
      annotations: {
        'pv.kubernetes.io/provisioned-by': DRIVER,
        ...(bulk ? { 'hostile.example/bulk': 'z'.repeat(bulk) } : {}),
      },
      finalizers: ['kubernetes.io/pv-protection', 'external-attacher/driver-harvesterhci-io'],
    },
    spec: {
      accessModes: ['ReadWriteOnce'],
      capacity: { storage: '1Gi' },
      claimRef: { kind: 'PersistentVolumeClaim', namespace: 'default', name: `data-${i}`, uid: `c-${i}` },
      csi: { driver: DRIVER, volumeHandle: name, fsType: 'ext4' },
      persistentVolumeReclaimPolicy: 'Delete',
      storageClassName: 'harvester',
      volumeMode: 'Filesystem',
    },
    status: { phase: 'Bound' },
  };
}

const list = (items: unknown[], meta: Record<string, string> = {}): string =>
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'PersistentVolumeList',
    metadata: { resourceVersion: '999', ...meta },
    items,
  });

export interface HostileApiserver {
  url(mode: HostileMode): string;
  /** Requests by "mode list" / "mode watch", and watch events streamed by mode. */
  readonly counts: Map<string, number>;
  close(): Promise<void>;
}

export async function startHostileApiserver(): Promise<HostileApiserver> {
  const counts = new Map<string, number>();
  const count = (key: string, n = 1): void => void counts.set(key, (counts.get(key) ?? 0) + n);
  // The 58 MB answer, made once: 85,000 PVs of some 690 bytes.
  const huge = Buffer.from(list(Array.from({ length: 85_000 }, (_, i) => pv(i))));
  const hugeGzipped = zlib.gzipSync(huge, { level: 6 });
  let pageToken = 0;
  const streams = new Set<http.ServerResponse>();

  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const mode = url.pathname.split('/')[1] as HostileMode;
    const watch = url.searchParams.get('watch') === '1';
    count(`${mode} ${watch ? 'watch' : 'list'}`);
    if (!url.pathname.endsWith('/api/v1/persistentvolumes') || !HOSTILE_MODES.includes(mode)) {
      res.writeHead(404, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', code: 404, reason: 'NotFound', message: 'not here' }));
      return;
    }
    if (watch) {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      streams.add(res);
      res.on('close', () => streams.delete(res));
      if (mode !== 'watch') return; // open, silent
      let i = 0;
      const pump = (): void => {
        while (!res.destroyed) {
          const event = JSON.stringify({ type: 'ADDED', object: pv(i++) }) + '\n';
          count('watch events');
          if (!res.write(event)) {
            res.once('drain', pump);
            return;
          }
        }
      };
      pump();
      return;
    }
    res.setHeader('Content-Type', 'application/json');
    switch (mode) {
      case 'many': {
        const limit = Math.min(Number(url.searchParams.get('limit') || 500), 5_000);
        const from = Number(url.searchParams.get('continue') || 0);
        const to = Math.min(MANY, from + limit);
        const items = Array.from({ length: to - from }, (_, k) => pv(from + k));
        res.end(list(items, to < MANY ? { continue: String(to) } : {}));
        return;
      }
      case 'huge':
        if (/\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''))) {
          res.setHeader('Content-Encoding', 'gzip');
          res.end(hugeGzipped);
        } else res.end(huge);
        return;
      case 'pages':
        res.end(list([pv(pageToken)], { continue: `next-${pageToken++}` }));
        return;
      case 'watch':
        res.end(list([]));
        return;
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (mode) => `http://127.0.0.1:${port}/${mode}`,
    counts,
    async close() {
      for (const s of streams) s.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A guest kubeconfig (inline token, as Rancher writes one) for a hostile guest at `server`. */
export function hostileKubeconfig(server: string): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    // Plain HTTP on loopback: kubeconfig rules ask it to be said so.
    `clusters: [{name: g, cluster: {server: "${server}", insecure-skip-tls-verify: true}}]`,
    'users: [{name: u, user: {token: "hostile-guest-admin-token"}}]',
    'contexts: [{name: g, context: {cluster: g, user: u}}]',
    'current-context: g',
  ].join('\n');
}
