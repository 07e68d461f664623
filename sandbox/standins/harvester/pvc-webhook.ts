// Harvester's validating webhook, the part for PVC deletion (harvester v1.8.0
// pkg/webhook/resources/persistentvolumeclaim/validator.go `Delete`, the `VMByPVC` index of
// pkg/util/indexeres, pkg/webhook/server/server.go): kube-apiserver asks it before deleting a
// PVC, and it refuses while a VM that is not being deleted names the PVC, as a
// `persistentVolumeClaim` volume of its template or in its volumeClaimTemplates annotation
// (Conflict, "can not delete the volume <pvc> which is currently attached to VM: <ns>/<vm>").
// The garbage collector's deletions pass. Registered as Harvester registers it: one
// ValidatingWebhookConfiguration `harvester-validator`, webhook `validator.harvesterhci.io`,
// failurePolicy Fail, sideEffects None (so a dry-run delete is asked too). Served over TLS on
// 127.0.0.1 with a certificate from the control plane's CA (the caller's), answered from the
// stand-ins' VM cache as Harvester answers from its own. Not played: the image-export and
// golden-image refusals, the owner-reference check, and the webhook's other resources.
import { keyText, keyTextOf } from '../../../src/api/object-key.js';
import { Resources } from '../../../src/kube/resources.js';
import { admissionWebhook, type WebhookServing } from '../admission-webhook.js';
import type { StandInContext } from '../context.js';
import { Annotations } from '../names.js';
import type { PersistentVolumeClaim, VirtualMachine } from '../types.js';
import { parseTemplates } from './vm-controller.js';

export type { WebhookServing } from '../admission-webhook.js';

const CONFIG_NAME = 'harvester-validator';
const WEBHOOK_NAME = 'validator.harvesterhci.io';
const VALIDATION_PATH = '/v1/webhook/validation';
const GARBAGE_COLLECTOR = 'system:serviceaccount:kube-system:generic-garbage-collector';
const VM_BY_PVC = 'harvester-vm-by-pvc';
const MAX_REVIEW_BYTES = 4 * 1024 * 1024;

/** `<namespace>/<claim>` of every PVC the VM names, as Harvester's VMByPVC index keys them. */
export function pvcsNamedBy(vm: VirtualMachine): string[] {
  const ns = vm.metadata.namespace ?? '';
  const names = new Set<string>();
  for (const v of vm.spec.template.spec.volumes ?? []) {
    if (v.persistentVolumeClaim?.claimName) names.add(v.persistentVolumeClaim.claimName);
  }
  const raw = vm.metadata.annotations?.[Annotations.volumeClaimTemplates];
  if (raw) {
    try {
      for (const t of parseTemplates(raw)) if (t.metadata.name) names.add(t.metadata.name);
    } catch {
      // Harvester's index fails for such a VM too; its mutator would not have let it in.
    }
  }
  return [...names].map((n) => keyText(ns, n));
}

export interface AdmissionRequest {
  uid: string;
  operation?: string;
  namespace?: string;
  name?: string;
  resource?: { group?: string; resource?: string };
  userInfo?: { username?: string };
  oldObject?: PersistentVolumeClaim;
}

export interface AdmissionVerdict {
  allowed: boolean;
  status?: { code: number; reason: string; message: string };
}

/** Harvester's decision on a PVC deletion, given the VMs its index says name the PVC. Pure. */
export function pvcDeletionVerdict(
  request: AdmissionRequest,
  naming: readonly VirtualMachine[],
): AdmissionVerdict {
  if (request.operation !== 'DELETE' || request.resource?.resource !== 'persistentvolumeclaims') {
    return { allowed: true };
  }
  if (request.userInfo?.username === GARBAGE_COLLECTOR) return { allowed: true };
  const name = request.oldObject?.metadata.name ?? request.name ?? '';
  const user = naming.find((vm) => !vm.metadata.deletionTimestamp);
  if (!user) return { allowed: true };
  return {
    allowed: false,
    status: {
      code: 409,
      reason: 'Conflict',
      message: `can not delete the volume ${name} which is currently attached to VM: ${keyTextOf(user)}`,
    },
  };
}

export interface PvcWebhook {
  /** Listens and registers the configuration; after the caches synced (Harvester waits for its own). */
  start(): Promise<void>;
  /** Deregisters first (failurePolicy Fail: no PVC could be deleted without it), then stops serving. */
  stop(): Promise<void>;
}

/** Declares the index on the VM cache (before the manager starts); start() serves and registers. */
export function pvcDeletionWebhook(ctx: StandInContext, serving: WebhookServing): PvcWebhook {
  const vms = ctx.manager
    .cache<VirtualMachine>({ type: Resources.virtualMachine })
    .addIndex(VM_BY_PVC, pvcsNamedBy);
  const logger = ctx.logger.child({ controller: 'harvester-webhook' });

  const review = (body: string): unknown => {
    const parsed = JSON.parse(body) as { apiVersion?: string; request?: AdmissionRequest };
    const request = parsed.request;
    if (!request?.uid) throw new Error('no AdmissionReview request');
    const key = keyText(
      request.oldObject?.metadata.namespace ?? request.namespace,
      request.oldObject?.metadata.name ?? request.name,
    );
    const verdict = pvcDeletionVerdict(request, vms.byIndex(VM_BY_PVC, key));
    if (!verdict.allowed)
      logger.info('refused a PVC deletion', { pvc: key, message: verdict.status?.message });
    return {
      apiVersion: parsed.apiVersion ?? 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: { uid: request.uid, ...verdict },
    };
  };

  const webhook = admissionWebhook(ctx.client, logger, serving, {
    kind: 'Validating',
    configName: CONFIG_NAME,
    webhookName: WEBHOOK_NAME,
    path: VALIDATION_PATH,
    maxReviewBytes: MAX_REVIEW_BYTES,
    rules: [
      {
        operations: ['DELETE'],
        apiGroups: [''],
        apiVersions: ['v1'],
        resources: ['persistentvolumeclaims'],
        scope: 'Namespaced',
      },
    ],
    admissionReviewVersions: ['v1', 'v1beta1'],
    review,
  });
  return {
    async start() {
      const port = await webhook.start();
      logger.info('Harvester PVC webhook registered', { port });
    },
    stop: () => webhook.stop(),
  };
}
