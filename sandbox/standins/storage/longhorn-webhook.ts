// Longhorn's mutating admission webhook, the part for creating a BackingImage (longhorn-manager
// v1.10.0 webhook/resources/backingimage/mutator.go `Create`, webhook/common for the finalizer):
// Harvester's image controller creates a BackingImage with `spec.dataEngine` empty, which
// Longhorn's CRD refuses (enum v1, v2; its default applies to an absent field only), so on a
// Harvester cluster Longhorn's mutator is what makes that create pass. Played: `dataEngine` v1 when
// empty, the `longhorn.io` finalizer, empty `disks` and `diskFileSpecMap` maps when absent, the
// `minNumberOfCopies` of Longhorn's setting (default 1) when 0, the checksum trimmed. Not played:
// name correction, source parameters of restore and clone, labels. Served over TLS on 127.0.0.1
// (the caller's certificate), registered as MutatingWebhookConfiguration
// `longhorn-webhook-mutator` for CREATE of backingimages, failurePolicy Fail.
import https from 'node:https';
import type http from 'node:http';
import { isAlreadyExists } from '../../../src/kube/errors.js';
import { clusterResourceType, type KubeObject } from '../../../src/kube/resources.js';
import type { StandInContext } from '../context.js';
import type { WebhookServing } from '../harvester/pvc-webhook.js';
import { LONGHORN_FINALIZER, type BackingImage } from './backing-images.js';

const MUTATING_CONFIG = clusterResourceType(
  'admissionregistration.k8s.io',
  'v1',
  'mutatingwebhookconfigurations',
  'MutatingWebhookConfiguration',
);
export const LONGHORN_MUTATOR_CONFIG = 'longhorn-webhook-mutator';
const MUTATION_PATH = '/v1/webhook/mutation';
const MAX_REVIEW_BYTES = 1024 * 1024;
/** Longhorn's setting default-min-number-of-backing-image-copies, default. */
const DEFAULT_MIN_COPIES = 1;

type PatchOp = { op: 'add' | 'replace'; path: string; value: unknown };

/** The JSON patch Longhorn's mutator answers for a BackingImage being created. Pure. */
export function backingImageCreatePatch(bi: BackingImage & { spec?: Record<string, unknown> }): PatchOp[] {
  const ops: PatchOp[] = [];
  const spec = bi.spec ?? {};
  if (bi.spec === undefined) ops.push({ op: 'add', path: '/spec', value: {} });
  const finalizers = bi.metadata.finalizers;
  if (!finalizers) ops.push({ op: 'add', path: '/metadata/finalizers', value: [LONGHORN_FINALIZER] });
  else if (!finalizers.includes(LONGHORN_FINALIZER))
    ops.push({ op: 'add', path: '/metadata/finalizers/-', value: LONGHORN_FINALIZER });
  const set = (field: string, value: unknown): void => {
    ops.push({ op: field in spec ? 'replace' : 'add', path: `/spec/${field}`, value });
  };
  set('checksum', typeof spec.checksum === 'string' ? spec.checksum.trim() : '');
  if (spec.disks == null) set('disks', {});
  if (spec.diskFileSpecMap == null) set('diskFileSpecMap', {});
  if (!spec.minNumberOfCopies) set('minNumberOfCopies', DEFAULT_MIN_COPIES);
  if (!spec.dataEngine) set('dataEngine', 'v1');
  return ops;
}

export interface LonghornWebhook {
  start(): Promise<void>;
  /** Deregisters first (failurePolicy Fail), then stops serving. */
  stop(): Promise<void>;
}

export function longhornMutatingWebhook(ctx: StandInContext, serving: WebhookServing): LonghornWebhook {
  const logger = ctx.logger.child({ controller: 'longhorn-webhook' });
  let server: https.Server | undefined;

  const review = (body: string): unknown => {
    const parsed = JSON.parse(body) as {
      apiVersion?: string;
      request?: { uid?: string; operation?: string; object?: BackingImage };
    };
    const request = parsed.request;
    if (!request?.uid) throw new Error('no AdmissionReview request');
    const response: Record<string, unknown> = { uid: request.uid, allowed: true };
    if (request.operation === 'CREATE' && request.object?.metadata) {
      const ops = backingImageCreatePatch(request.object);
      response.patchType = 'JSONPatch';
      response.patch = Buffer.from(JSON.stringify(ops), 'utf8').toString('base64');
    }
    return { apiVersion: parsed.apiVersion ?? 'admission.k8s.io/v1', kind: 'AdmissionReview', response };
  };

  const onRequest = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    if (req.method !== 'POST' || req.url?.split('?')[0] !== MUTATION_PATH) {
      res.writeHead(404).end();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_REVIEW_BYTES) req.destroy();
      else chunks.push(c);
    });
    req.on('end', () => {
      try {
        const answer = JSON.stringify(review(Buffer.concat(chunks).toString('utf8')));
        res.writeHead(200, { 'Content-Type': 'application/json' }).end(answer);
      } catch (err) {
        res.writeHead(400, { 'Content-Type': 'text/plain' }).end(String(err));
      }
    });
  };

  return {
    async start() {
      const listening = https.createServer({ cert: serving.certPem, key: serving.keyPem }, onRequest);
      server = listening;
      await new Promise<void>((resolve, reject) => {
        listening.once('error', reject);
        listening.listen(0, '127.0.0.1', () => resolve());
      });
      const port = (listening.address() as { port: number }).port;
      const config = {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'MutatingWebhookConfiguration',
        metadata: { name: LONGHORN_MUTATOR_CONFIG },
        webhooks: [
          {
            name: 'mutator.longhorn.io',
            clientConfig: {
              url: `https://127.0.0.1:${port}${MUTATION_PATH}`,
              caBundle: Buffer.from(serving.caPem, 'utf8').toString('base64'),
            },
            rules: [
              {
                operations: ['CREATE'],
                apiGroups: ['longhorn.io'],
                apiVersions: ['v1beta2'],
                resources: ['backingimages'],
                scope: 'Namespaced',
              },
            ],
            failurePolicy: 'Fail',
            sideEffects: 'None',
            admissionReviewVersions: ['v1'],
          },
        ],
      } as unknown as KubeObject;
      try {
        await ctx.client.create(MUTATING_CONFIG, config);
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
        const current = await ctx.client.get<KubeObject>(MUTATING_CONFIG, { name: LONGHORN_MUTATOR_CONFIG });
        await ctx.client.update(MUTATING_CONFIG, {
          ...config,
          metadata: { ...config.metadata, resourceVersion: current.metadata.resourceVersion },
        });
      }
      logger.info("Longhorn's BackingImage mutator registered", { port });
    },
    async stop() {
      await ctx.client.delete(MUTATING_CONFIG, { name: LONGHORN_MUTATOR_CONFIG }).catch((err: unknown) => {
        logger.warn("could not deregister Longhorn's BackingImage mutator", { error: String(err) });
      });
      const s = server;
      server = undefined;
      if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
      s?.closeAllConnections();
    },
  };
}
