// What the caches keep of each object: the fields the controller reads, nothing else
// (no managedFields, no status beyond the credential, no driver settings, no user data, no
// unrelated Secret data, no label, annotation or owner nobody reads). With 20,000 machines
// every field kept per object costs megabytes; cache-transforms_test.ts checks that what the
// reconcilers read survives.
// Each is shape-checked first (object-shape.ts): a field read later of the wrong type or an
// absurd size throws Malformed naming it, and the cache drops the object and counts it
// (caches.ts wraps each in shapeChecked), so one odd object never throws in a reconciler.
import type { KubeObject, ObjectMeta } from '../../kube/resources.js';
import {
  ANNOTATION_CREDENTIAL_EXPIRATION,
  CREDENTIAL_KEY_CLUSTER_ID,
  CREDENTIAL_KEY_CLUSTER_TYPE,
  CREDENTIAL_KEY_KUBECONFIG,
  isHarvesterCredential,
} from '../../rancher/cloud-credential.js';
import { CLOUD_PROVIDER_CHART, cloudProviderClusterName } from '../../rancher/chart-values.js';
import { ANNOTATION_SKIP_MACHINE_PROVISION_CLEANUP } from '../../harvester/labels.js';
import {
  CAPI_LABEL_CLUSTER_NAME,
  LABEL_CAPI_DEPLOYMENT,
  LABEL_RKE_CAPI_MACHINE,
  LABEL_RKE_MACHINE_POOL,
  PRE_TERMINATE_HOOK_PREFIX,
} from '../../rancher/labels.js';
import type { CapiMachine, HarvesterMachine, ProvisioningCluster, SecretObject } from './types.js';
import {
  MAX_NAMESPACE,
  Malformed,
  checkMeta,
  isRecord,
  optionalRecord,
  MAX_SECRET_VALUE,
  optionalStringMap,
  optionalText,
  record,
} from './object-shape.js';

/** `o.spec` (a record, or absent) after checking the metadata. */
function checked(o: KubeObject): {
  spec: Record<string, unknown> | undefined;
  status: Record<string, unknown> | undefined;
} {
  checkMeta(o);
  const raw = o as unknown as Record<string, unknown>;
  optionalText(raw.apiVersion, 'apiVersion');
  optionalText(raw.kind, 'kind');
  return { spec: optionalRecord(raw.spec, 'spec'), status: optionalRecord(raw.status, 'status') };
}

/** A Secret reference, a name or "namespace:name": at most a namespace, a colon and a name. */
const SECRET_REF = MAX_NAMESPACE + 1 + 253;

/** The labels read: the cluster, and how a machine is matched to its pool (credential-choice.ts). */
const MACHINE_LABELS = [CAPI_LABEL_CLUSTER_NAME, LABEL_RKE_MACHINE_POOL, LABEL_CAPI_DEPLOYMENT];
/** A HarvesterMachine's also its Machine's name (controller.ts). */
const HARVESTER_MACHINE_LABELS = [...MACHINE_LABELS, LABEL_RKE_CAPI_MACHINE];
/** Every pre-terminate hook (ours has the configured name) and the opt-out (deletion-scope.ts). */
const machineAnnotation = (k: string): boolean =>
  k.startsWith(PRE_TERMINATE_HOOK_PREFIX) || k === ANNOTATION_SKIP_MACHINE_PROVISION_CLEANUP;
const clusterAnnotation = (k: string): boolean => k === ANNOTATION_SKIP_MACHINE_PROVISION_CLEANUP;

/**
 * Values that thousands of objects repeat (namespaces, API versions and kinds, cluster, pool and
 * credential names) kept once: JSON.parse makes a new string for each. Bounded: past the limit
 * a value is kept as it comes.
 */
const sharedStrings = new Map<string, string>();
const MAX_SHARED_STRINGS = 50_000;
function shared<T extends string | null | undefined>(value: T): T {
  if (typeof value !== 'string') return value;
  const known = sharedStrings.get(value);
  if (known !== undefined) return known as T;
  if (sharedStrings.size < MAX_SHARED_STRINGS) sharedStrings.set(value, value);
  return value;
}

function pick(
  from: Record<string, string> | undefined,
  keep: readonly string[] | ((key: string) => boolean),
): Record<string, string> | undefined {
  if (!from) return undefined;
  const wanted = typeof keep === 'function' ? keep : (k: string) => keep.includes(k);
  let out: Record<string, string> | undefined;
  for (const [k, v] of Object.entries(from)) if (wanted(k)) (out ??= {})[k] = shared(v);
  return out;
}

function meta(
  m: ObjectMeta,
  keep: {
    labels?: readonly string[];
    annotations?: readonly string[] | ((key: string) => boolean);
    machineOwner?: boolean;
  } = {},
): ObjectMeta {
  const out: ObjectMeta = { name: m.name };
  if (m.namespace !== undefined) out.namespace = shared(m.namespace);
  for (const k of ['uid', 'resourceVersion', 'deletionTimestamp'] as const)
    if (m[k] !== undefined) out[k] = m[k];
  const labels = keep.labels && pick(m.labels, keep.labels);
  if (labels) out.labels = labels;
  const annotations = keep.annotations && pick(m.annotations, keep.annotations);
  if (annotations) out.annotations = annotations;
  // Of the owners, the Machine's name (the HarvesterMachine's link to it).
  const owner = keep.machineOwner ? m.ownerReferences?.find((o) => o.kind === 'Machine') : undefined;
  if (owner)
    out.ownerReferences = [{ kind: shared(owner.kind), name: owner.name }] as ObjectMeta['ownerReferences'];
  return out;
}

const head = (o: KubeObject): Pick<KubeObject, 'apiVersion' | 'kind'> => ({
  ...(o.apiVersion ? { apiVersion: shared(o.apiVersion) } : {}),
  ...(o.kind ? { kind: shared(o.kind) } : {}),
});

function infrastructureRef(m: CapiMachine): CapiMachine['spec']['infrastructureRef'] | undefined {
  const ref = m.spec?.infrastructureRef;
  if (!ref) return undefined;
  return {
    ...(ref.apiVersion !== undefined ? { apiVersion: shared(ref.apiVersion) } : {}),
    ...(ref.kind !== undefined ? { kind: shared(ref.kind) } : {}),
    ...(ref.name !== undefined ? { name: ref.name } : {}),
    ...(ref.namespace !== undefined ? { namespace: shared(ref.namespace) } : {}),
  };
}

export function slimMachine(o: KubeObject): KubeObject {
  const { spec } = checked(o);
  optionalText(spec?.clusterName, 'spec.clusterName');
  const ref = optionalRecord(spec?.infrastructureRef, 'spec.infrastructureRef');
  for (const k of ['apiVersion', 'kind', 'name', 'namespace'] as const)
    optionalText(ref?.[k], `spec.infrastructureRef.${k}`);
  const m = o as CapiMachine;
  return {
    ...head(m),
    metadata: meta(m.metadata, { labels: MACHINE_LABELS, annotations: machineAnnotation }),
    spec: { clusterName: shared(m.spec?.clusterName), infrastructureRef: infrastructureRef(m) },
  } as CapiMachine;
}

export function slimHarvesterMachine(o: KubeObject): KubeObject {
  const { spec, status } = checked(o);
  optionalText(spec?.vmNamespace, 'spec.vmNamespace', MAX_NAMESPACE);
  optionalText(
    optionalRecord(spec?.common, 'spec.common')?.cloudCredentialSecretName,
    'spec.common.cloudCredentialSecretName',
    SECRET_REF,
  );
  optionalText(status?.cloudCredentialSecretName, 'status.cloudCredentialSecretName', SECRET_REF);
  const m = o as HarvesterMachine;
  const credential = m.spec?.common?.cloudCredentialSecretName;
  return {
    ...head(m),
    metadata: meta(m.metadata, { labels: HARVESTER_MACHINE_LABELS, machineOwner: true }),
    spec: {
      vmNamespace: shared(m.spec?.vmNamespace ?? null),
      ...(credential ? { common: { cloudCredentialSecretName: shared(credential) } } : {}),
    },
    ...(m.status?.cloudCredentialSecretName
      ? { status: { cloudCredentialSecretName: shared(m.status.cloudCredentialSecretName) } }
      : {}),
  } as HarvesterMachine;
}

/** The fields of a (CAPI or provisioning) Cluster that slimCluster reads. */
function checkCluster(o: KubeObject): void {
  const { spec, status } = checked(o);
  optionalText(spec?.cloudCredentialSecretName, 'spec.cloudCredentialSecretName', SECRET_REF);
  const rke = optionalRecord(spec?.rkeConfig, 'spec.rkeConfig');
  const machinePools: unknown = rke?.machinePools;
  if (machinePools !== undefined && machinePools !== null) {
    if (!Array.isArray(machinePools) || machinePools.length > 1000)
      throw new Malformed('spec.rkeConfig.machinePools');
    for (const pool of machinePools as unknown[]) {
      const p = record(pool, 'spec.rkeConfig.machinePools');
      optionalText(p.name, 'spec.rkeConfig.machinePools.name');
      optionalText(
        p.cloudCredentialSecretName,
        'spec.rkeConfig.machinePools.cloudCredentialSecretName',
        SECRET_REF,
      );
      const ref = optionalRecord(p.machineConfigRef, 'spec.rkeConfig.machinePools.machineConfigRef');
      for (const k of ['apiVersion', 'kind', 'name'] as const)
        optionalText(ref?.[k], 'spec.rkeConfig.machinePools.machineConfigRef');
    }
  }
  for (const k of ['cloudCredentialSecretName', 'clientSecretName'] as const)
    optionalText(status?.[k], `status.${k}`, SECRET_REF);
}

export function slimCluster(o: KubeObject): KubeObject {
  checkCluster(o);
  const c = o as ProvisioningCluster;
  const pools = c.spec?.rkeConfig?.machinePools;
  // Of the chart values, only the name the cloud provider labels load balancers with.
  const lbName = cloudProviderClusterName(c);
  const chartValues =
    lbName !== undefined
      ? { chartValues: { [CLOUD_PROVIDER_CHART]: { global: { cattle: { clusterName: lbName } } } } }
      : {};
  return {
    ...head(c),
    metadata: {
      ...meta(c.metadata, { annotations: clusterAnnotation }),
      // When the cluster was made: no volume made before it is its own (guest-volumes.ts).
      ...(c.metadata.creationTimestamp ? { creationTimestamp: c.metadata.creationTimestamp } : {}),
    },
    ...(c.spec
      ? {
          spec: {
            cloudCredentialSecretName: c.spec.cloudCredentialSecretName ?? null,
            ...(pools || lbName !== undefined
              ? {
                  rkeConfig: {
                    ...(pools
                      ? {
                          machinePools: pools.map((p) => ({
                            name: p.name,
                            cloudCredentialSecretName: p.cloudCredentialSecretName ?? null,
                            machineConfigRef: p.machineConfigRef,
                          })),
                        }
                      : {}),
                    ...chartValues,
                  },
                }
              : {}),
          },
        }
      : {}),
    ...(c.status?.cloudCredentialSecretName || c.status?.clientSecretName
      ? {
          status: {
            ...(c.status.cloudCredentialSecretName
              ? { cloudCredentialSecretName: c.status.cloudCredentialSecretName }
              : {}),
            // Set once Rancher wrote `<cluster>-kubeconfig` (guest-watches.ts).
            ...(c.status.clientSecretName ? { clientSecretName: c.status.clientSecretName } : {}),
          },
        }
      : {}),
  };
}

const CREDENTIAL_KEYS = [CREDENTIAL_KEY_KUBECONFIG, CREDENTIAL_KEY_CLUSTER_ID, CREDENTIAL_KEY_CLUSTER_TYPE];

/** A Secret that is not a Harvester credential keeps no data at all. */
export function slimSecret(o: KubeObject): KubeObject {
  checked(o);
  const raw = o as unknown as Record<string, unknown>;
  optionalText(raw.type, 'type');
  // Values are base64 (a kubeconfig of a few KiB); the data of a Secret is at most 1 MiB.
  if (isRecord(raw.data)) optionalStringMap(raw.data, 'data', MAX_SECRET_VALUE);
  else if (raw.data !== undefined && raw.data !== null) throw new Malformed('data');
  const s = o as SecretObject;
  const harvester = isHarvesterCredential(s);
  const data = harvester
    ? Object.fromEntries(
        CREDENTIAL_KEYS.filter((k) => s.data?.[k] !== undefined).map((k) => [k, s.data?.[k] as string]),
      )
    : undefined;
  return {
    ...head(s),
    metadata: meta(s.metadata, { annotations: [ANNOTATION_CREDENTIAL_EXPIRATION] }),
    ...(data ? { data } : {}),
  };
}
