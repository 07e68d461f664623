// Longhorn's backing images, as far as Harvester's own image controller observes them:
// Harvester v1.8.0's `harvester` makes the BackingImage and the image's StorageClass
// itself, then follows the BackingImage's status). Longhorn's engine and its backing-image
// manager and data-source pods cannot run here; this plays what they report on the object
// (longhorn-manager v1.10.0, the version Harvester v1.8.0's go.mod names:
// k8s/pkg/apis/longhorn/v1beta2/backingimage.go, controller/backing_image_controller.go):
// - finalizer `longhorn.io`, removed when the BackingImage is deleted (no volume uses a file here);
// - status.ownerID (the node), status.uuid, and one entry in status.diskFileStatusMap keyed by
//   the sandbox disk's UUID, walking pending -> in-progress -> ready, or failed with a message;
// - the data source's download of a `download` BackingImage's URL (parameter `url`), which here is
//   fetched only from 127.0.0.1 (the sandbox's image server): status.size (bytes), virtualSize (a
//   qcow2 header's, else the length), realSize, checksum (SHA-512, as Longhorn's).
// Harvester's side (harvester v1.8.0 pkg/image/backingimage/backing_image_controller.go): with
// exactly one entry in diskFileStatusMap, `ready` marks the image Imported with the status's size
// and virtualSize, `failed` fails the import, another state with a new progress is Importing; but
// only once the image is Initialized, and nothing asks again (lasso's resync is 10 hours). A real
// data source (a pod that starts, then fetches) outlasts Harvester's few writes from the
// BackingImage's creation to Initialized; here the outcome is known at once, so every outcome,
// `ready` and `failed` alike, waits until the image it belongs to (annotation
// harvesterhci.io/imageId) is Initialized. A `failed` written sooner is read by Harvester while the
// image is not Initialized yet, ignored, and never read again: the image stays importing for ever.
import crypto from 'node:crypto';
import http from 'node:http';
import { objectKey } from '../../../src/api/object-key.js';
import type { Controller } from '../../../src/kube/manager.js';
import { Resources, resourceType, type KubeObject } from '../../../src/kube/resources.js';
import { virtualSizeOf } from '../../image-server.js';
import type { StandInContext } from '../context.js';
import { conditionIs } from '../harvester/conditions.js';
import { SANDBOX_NODE } from '../names.js';
import { nowIso } from '../runtime.js';
import type { VirtualMachineImage } from '../types.js';
import { patchFinalizers, refOf, updateWithRetry, withFinalizer, withoutFinalizer } from '../writes.js';

export const BackingImages = resourceType('longhorn.io', 'v1beta2', 'backingimages', 'BackingImage');
export const LONGHORN_NAMESPACE = 'longhorn-system';
export const LONGHORN_FINALIZER = 'longhorn.io';
/** The one Longhorn disk of the sandbox's node. */
export const SANDBOX_DISK_UUID = 'a5d1e0c4-5b1f-4e39-9c1a-000000000001';
/** Harvester's annotation naming the image ("namespace/name") a BackingImage was made for. */
export const IMAGE_ID_ANNOTATION = 'harvesterhci.io/imageId';
/** The largest file the stand-in downloads (the sandbox serves a header, not a disk). */
export const MAX_DOWNLOAD_BYTES = 1024 * 1024;
/** How long the in-progress state is shown before ready (a download's time, shortened). */
const DOWNLOAD_MS = 200;

export type FileState = 'pending' | 'in-progress' | 'ready' | 'failed';

export interface DiskFileStatus {
  dataEngine?: string;
  state?: string;
  progress?: number;
  message?: string;
  lastStateTransitionTime?: string;
}

export interface BackingImage extends KubeObject {
  spec?: {
    sourceType?: string;
    sourceParameters?: Record<string, string>;
    checksum?: string;
    minNumberOfCopies?: number;
  };
  status?: {
    ownerID?: string;
    uuid?: string;
    size?: number;
    virtualSize?: number;
    realSize?: number;
    checksum?: string;
    diskFileStatusMap?: Record<string, DiskFileStatus> | null;
    [field: string]: unknown;
  };
}

export interface Downloaded {
  size: number;
  virtualSize: number;
  checksum: string;
}

/** Why a URL is not fetched here (undefined: it may be): only http on the loopback address. */
export function refusedUrl(raw: string | undefined): string | undefined {
  if (!raw) return 'no url in the source parameters';
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return `url ${JSON.stringify(raw.slice(0, 200))} does not parse`;
  }
  if (url.protocol !== 'http:') return `url scheme ${url.protocol} is not served in the sandbox`;
  if (url.hostname !== '127.0.0.1')
    return `url host ${url.hostname} is not the sandbox's image server (127.0.0.1): nothing is downloaded from elsewhere`;
  return undefined;
}

/** The data source's download: the whole file, bounded, measured and summed. */
export function download(url: string, maxBytes = MAX_DOWNLOAD_BYTES): Promise<Downloaded> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { timeout: 10_000 }, (res) => {
      if ((res.statusCode ?? 0) < 200 || (res.statusCode ?? 0) >= 300) {
        res.resume();
        reject(new Error(`got ${res.statusCode ?? 0} status code from ${url}`));
        return;
      }
      const chunks: Buffer[] = [];
      let length = 0;
      res.on('data', (chunk: Buffer) => {
        length += chunk.length;
        if (length > maxBytes) {
          req.destroy(new Error(`${url} is larger than ${maxBytes} bytes`));
          return;
        }
        chunks.push(chunk);
      });
      res.on('end', () => {
        const file = Buffer.concat(chunks);
        resolve({
          size: file.length,
          virtualSize: virtualSizeOf(file.subarray(0, 512), file.length),
          checksum: crypto.createHash('sha512').update(file).digest('hex'),
        });
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${url}: no answer in 10 s`)));
    req.on('error', reject);
  });
}

function fileStatus(bi: BackingImage): DiskFileStatus | undefined {
  return bi.status?.diskFileStatusMap?.[SANDBOX_DISK_UUID] ?? undefined;
}

/** The status with the sandbox disk's file in `state` (its transition time kept while unchanged). */
export function withFile(
  status: BackingImage['status'],
  file: { state: FileState; progress: number; message?: string },
): NonNullable<BackingImage['status']> {
  const before = status?.diskFileStatusMap?.[SANDBOX_DISK_UUID];
  const changed = before?.state !== file.state;
  return {
    ...status,
    diskFileStatusMap: {
      [SANDBOX_DISK_UUID]: {
        dataEngine: 'v1',
        state: file.state,
        progress: file.progress,
        message: file.message ?? '',
        lastStateTransitionTime: changed ? nowIso() : (before.lastStateTransitionTime ?? nowIso()),
      },
    },
  };
}

/** The data source's next step for a BackingImage (a pure decision; the controller writes it). */
export type FileStep =
  /** Its file is ready or failed already: nothing more happens to it. */
  | { step: 'none' }
  /** Taken by the sandbox's node: ownerID, uuid, the file pending. */
  | { step: 'own' }
  /** Its image is not Initialized yet: Harvester would not read an outcome now. */
  | { step: 'wait' }
  | { step: 'fail'; message: string }
  /** The file in progress, for a download's time. */
  | { step: 'start' }
  | { step: 'download'; url: string };

export function nextFileStep(bi: BackingImage, imageInitialized: boolean): FileStep {
  const file = fileStatus(bi);
  if (file?.state === 'ready' || file?.state === 'failed') return { step: 'none' };
  if (!bi.status?.uuid) return { step: 'own' };
  if (!imageInitialized) return { step: 'wait' };
  if (bi.spec?.sourceType !== 'download') {
    // Export, restore and clone need Longhorn's volumes and backup store: not played.
    return {
      step: 'fail',
      message: `source type ${bi.spec?.sourceType ?? '(none)'} is not played in the sandbox`,
    };
  }
  // A download in progress for a while before its outcome, also a refused one (as a data source
  // that starts, then fails to fetch): Harvester's caches see the image Initialized meanwhile.
  if (file?.state !== 'in-progress') return { step: 'start' };
  const url = bi.spec.sourceParameters?.url;
  const refused = refusedUrl(url);
  if (refused !== undefined || url === undefined) return { step: 'fail', message: refused ?? 'no url' };
  return { step: 'download', url };
}

export function backingImageStandIn(ctx: StandInContext): Controller {
  const { client } = ctx;
  const backingImages = ctx.manager.cache<BackingImage>({
    type: BackingImages,
    namespaces: [LONGHORN_NAMESPACE],
  });
  const images = ctx.manager.cache<VirtualMachineImage>({ type: Resources.virtualMachineImage });

  const writeStatus = (
    bi: BackingImage,
    change: (status: BackingImage['status']) => BackingImage['status'] | undefined,
  ): Promise<unknown> =>
    updateWithRetry(
      client,
      BackingImages,
      bi,
      refOf(bi),
      (copy) => {
        const status = change(copy.status);
        if (!status) return undefined;
        copy.status = status;
        return copy;
      },
      'status',
    );

  const imageInitialized = (bi: BackingImage): boolean => {
    const [namespace = '', name = ''] = (bi.metadata.annotations?.[IMAGE_ID_ANNOTATION] ?? '').split('/');
    const image = images.get(objectKey(namespace, name));
    return conditionIs(image?.status?.conditions, 'Initialized', 'True');
  };

  return ctx.manager
    .controller('longhorn-backing-image', {
      reconcile: async (key) => {
        const bi = backingImages.get(key);
        if (!bi) return;
        if (bi.metadata.deletionTimestamp) {
          await patchFinalizers(client, BackingImages, bi, withoutFinalizer(LONGHORN_FINALIZER));
          return;
        }
        if (await patchFinalizers(client, BackingImages, bi, withFinalizer(LONGHORN_FINALIZER))) return;
        const next = nextFileStep(bi, imageInitialized(bi));
        switch (next.step) {
          case 'none':
          case 'wait': // its image's event brings the next step
            return;
          case 'own':
            await writeStatus(bi, (s) =>
              s?.uuid
                ? undefined
                : {
                    ...withFile(s, { state: 'pending', progress: 0 }),
                    ownerID: SANDBOX_NODE,
                    uuid: crypto.randomBytes(4).toString('hex'),
                  },
            );
            return;
          case 'fail':
            await writeStatus(bi, (s) =>
              withFile(s, { state: 'failed', progress: 0, message: next.message }),
            );
            return;
          case 'start':
            await writeStatus(bi, (s) => withFile(s, { state: 'in-progress', progress: 50 }));
            return { requeueAfterMs: DOWNLOAD_MS };
          case 'download':
            break;
        }
        let got: Downloaded;
        try {
          got = await download(next.url);
        } catch (err) {
          const message = (err as Error).message;
          await writeStatus(bi, (s) => withFile(s, { state: 'failed', progress: 0, message }));
          return;
        }
        await writeStatus(bi, (s) => ({
          ...withFile(s, { state: 'ready', progress: 100 }),
          size: got.size,
          virtualSize: got.virtualSize,
          realSize: got.size,
          checksum: s?.checksum || got.checksum,
        }));
        return;
      },
      logger: ctx.logger.child({ controller: 'longhorn-backing-image' }),
    })
    .watch(backingImages)
    .watch(images, (e) =>
      e.object.metadata.uid ? objectKey(LONGHORN_NAMESPACE, `vmi-${e.object.metadata.uid}`) : undefined,
    );
}
