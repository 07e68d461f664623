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
import { admissionWebhook, type WebhookServing } from '../admission-webhook.js';
import type { StandInContext } from '../context.js';
import { LONGHORN_FINALIZER, type BackingImage } from './backing-images.js';

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

  const webhook = admissionWebhook(ctx.client, logger, serving, {
    kind: 'Mutating',
    configName: LONGHORN_MUTATOR_CONFIG,
    webhookName: 'mutator.longhorn.io',
    path: MUTATION_PATH,
    maxReviewBytes: MAX_REVIEW_BYTES,
    rules: [
      {
        operations: ['CREATE'],
        apiGroups: ['longhorn.io'],
        apiVersions: ['v1beta2'],
        resources: ['backingimages'],
        scope: 'Namespaced',
      },
    ],
    admissionReviewVersions: ['v1'],
    review,
  });
  return {
    async start() {
      const port = await webhook.start();
      logger.info("Longhorn's BackingImage mutator registered", { port });
    },
    stop: () => webhook.stop(),
  };
}
