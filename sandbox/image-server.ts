// The sandbox's image download site: an HTTP server on 127.0.0.1 serving the seeded image's URL,
// so that Harvester's own image controller, which asks the URL with a HEAD before anything else
// (harvester v1.8.0 pkg/image/common/operator.go, CheckURLAndUpdate: a status outside 2xx-3xx or
// an unreachable host fails the image's initialization), and the Longhorn backing-image stand-in,
// which downloads it as Longhorn's data source would, both stay on this machine.
//
// What it serves is not a disk: a qcow2 header declaring the virtual size of the cloud image
// (Longhorn reads the virtual size from there), padded to a small file. Nothing else is served.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** The seeded image's file name (its path on the server). */
export const SEED_IMAGE_FILE = 'ubuntu-22.04-server-cloudimg-amd64.img';
/** The virtual size its qcow2 header declares: that of Ubuntu 22.04's cloud image (bytes). */
export const SEED_IMAGE_VIRTUAL_SIZE = 2_361_393_152;
/** The served file's length (bytes): a header and zeros. */
export const SEED_IMAGE_BYTES = 64 * 1024;

const QCOW2_MAGIC = 0x514649fb;
/** Version 3's header length (bytes). */
const QCOW2_V3_HEADER = 104;

/** A qcow2 (version 3) header declaring `virtualSize`, followed by zeros up to `length` bytes. */
export function qcow2Header(virtualSize: number, length = SEED_IMAGE_BYTES): Buffer {
  const b = Buffer.alloc(Math.max(length, QCOW2_V3_HEADER));
  b.writeUInt32BE(QCOW2_MAGIC, 0);
  b.writeUInt32BE(3, 4); // version
  b.writeUInt32BE(16, 20); // cluster bits: 64 KiB clusters
  b.writeBigUInt64BE(BigInt(virtualSize), 24);
  b.writeUInt32BE(4, 96); // refcount order: 16-bit refcounts
  b.writeUInt32BE(QCOW2_V3_HEADER, 100);
  return b;
}

/** The virtual size a file's first bytes declare: a qcow2 header's, else the file's own length (raw). */
export function virtualSizeOf(head: Buffer, fileLength: number): number {
  if (head.length >= 32 && head.readUInt32BE(0) === QCOW2_MAGIC) return Number(head.readBigUInt64BE(24));
  return fileLength;
}

export interface ImageServer {
  /** The URL of the seeded image, on 127.0.0.1. */
  seedImageUrl: string;
  /** Requests answered, by method ("HEAD", "GET"): who asked the URL, in the tests. */
  requests: Record<string, number>;
  stop(): Promise<void>;
}

export async function startImageServer(): Promise<ImageServer> {
  const body = qcow2Header(SEED_IMAGE_VIRTUAL_SIZE);
  const requests: Record<string, number> = {};
  const server = http.createServer((req, res) => {
    const method = req.method ?? '';
    requests[method] = (requests[method] ?? 0) + 1;
    if (req.url !== `/${SEED_IMAGE_FILE}`) {
      res.writeHead(404).end();
      return;
    }
    if (method !== 'GET' && method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length });
    res.end(method === 'HEAD' ? undefined : body);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    seedImageUrl: `http://127.0.0.1:${port}/${SEED_IMAGE_FILE}`,
    requests,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
