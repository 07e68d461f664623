// What the caches keep of each object: the fields the controller reads, nothing else
// (no managedFields, no driver settings, no user data, no unrelated Secret data). With
// 5,000 HarvesterMachines this is the difference between ~70 MB and a few MB of heap.
import type { KubeObject, ObjectMeta } from '../kube/resources.js';
import {
  ANNOTATION_CREDENTIAL_EXPIRATION,
  CREDENTIAL_KEY_CLUSTER_ID,
  CREDENTIAL_KEY_CLUSTER_TYPE,
  CREDENTIAL_KEY_KUBECONFIG,
  isHarvesterCredential,
} from '../rancher/cloud-credential.js';
import { CLOUD_PROVIDER_CHART, cloudProviderClusterName } from '../rancher/chart-values.js';
import type { CapiMachine, HarvesterMachine, ProvisioningCluster, SecretObject } from './types.js';

function meta(
  m: ObjectMeta,
  keep: { labels?: boolean; annotations?: boolean | string[]; owners?: boolean } = {},
): ObjectMeta {
  const out: ObjectMeta = { name: m.name };
  for (const k of ['namespace', 'uid', 'resourceVersion', 'deletionTimestamp'] as const)
    if (m[k] !== undefined) out[k] = m[k];
  if (keep.labels && m.labels) out.labels = m.labels;
  if (keep.owners && m.ownerReferences) out.ownerReferences = m.ownerReferences;
  if (keep.annotations === true && m.annotations) out.annotations = m.annotations;
  if (Array.isArray(keep.annotations) && m.annotations) {
    const picked = Object.fromEntries(
      keep.annotations
        .filter((k) => m.annotations?.[k] !== undefined)
        .map((k) => [k, m.annotations?.[k] as string]),
    );
    if (Object.keys(picked).length) out.annotations = picked;
  }
  return out;
}

const head = (o: KubeObject): Pick<KubeObject, 'apiVersion' | 'kind'> => ({
  ...(o.apiVersion ? { apiVersion: o.apiVersion } : {}),
  ...(o.kind ? { kind: o.kind } : {}),
});

export function slimMachine(o: KubeObject): KubeObject {
  const m = o as CapiMachine;
  return {
    ...head(m),
    metadata: meta(m.metadata, { labels: true, annotations: true }),
    spec: { clusterName: m.spec?.clusterName, infrastructureRef: m.spec?.infrastructureRef },
  } as CapiMachine;
}

export function slimHarvesterMachine(o: KubeObject): KubeObject {
  const m = o as HarvesterMachine;
  const credential = m.spec?.common?.cloudCredentialSecretName;
  return {
    ...head(m),
    metadata: meta(m.metadata, { labels: true, owners: true }),
    spec: {
      vmNamespace: m.spec?.vmNamespace ?? null,
      ...(credential ? { common: { cloudCredentialSecretName: credential } } : {}),
    },
    ...(m.status?.cloudCredentialSecretName
      ? { status: { cloudCredentialSecretName: m.status.cloudCredentialSecretName } }
      : {}),
  } as HarvesterMachine;
}

export function slimCluster(o: KubeObject): KubeObject {
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
    metadata: meta(c.metadata, { annotations: true }),
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
    ...(c.status?.cloudCredentialSecretName
      ? { status: { cloudCredentialSecretName: c.status.cloudCredentialSecretName } }
      : {}),
  };
}

const CREDENTIAL_KEYS = [CREDENTIAL_KEY_KUBECONFIG, CREDENTIAL_KEY_CLUSTER_ID, CREDENTIAL_KEY_CLUSTER_TYPE];

/** A Secret that is not a Harvester credential keeps no data at all. */
export function slimSecret(o: KubeObject): KubeObject {
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
