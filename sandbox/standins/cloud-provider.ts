// What Harvester's cloud provider, running inside a guest cluster, does on Harvester for one
// of the guest's `type: LoadBalancer` Services (cloud-provider-harvester
// pkg/cloud-controller-manager/loadbalancer.go, docs/upstream/load-balancers.md): a
// LoadBalancer object in the VMs' namespace, named and labelled after the cluster and the
// Service, then a wait for Harvester's load balancer controller to allocate its address.
// There is no guest cluster here, so the caller says which Service and which cluster.
import crypto from 'node:crypto';
import { crc32 } from 'node:zlib';
import { keyText } from '../../src/api/object-key.js';
import { LABEL_GUEST_CLUSTER_NAME } from '../../src/harvester/labels.js';
import {
  LB_ANNOTATION_CLUSTER,
  LB_ANNOTATION_NAMESPACE,
  LB_ANNOTATION_NETWORK,
  LB_ANNOTATION_PROJECT,
  LB_LABEL_CLUSTER,
  LB_LABEL_SERVICE_NAME,
  LB_LABEL_SERVICE_NAMESPACE,
  type LoadBalancer,
} from '../../src/harvester/load-balancers.js';
import type { KubeClient } from '../../src/kube/client.js';
import { isAlreadyExists } from '../../src/kube/errors.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { waitFor } from '../../src/kube/wait.js';

const MAX_NAME = 63;
const SUFFIX = 8;
const DNS_1035 = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

/** The load balancer's name: `<cluster>-<ns>-<service>-` (at most 55 characters) and 8 hex digits of a CRC-32. */
export function cloudProviderLbName(
  cluster: string,
  serviceNamespace: string,
  serviceName: string,
  uid: string,
): string {
  const prefix = DNS_1035.test(cluster) && cluster.length <= MAX_NAME ? cluster : `a${cluster}`;
  let base = `${prefix}-${serviceNamespace}-${serviceName}-`;
  const digest = crc32(Buffer.from(base + uid, 'utf8'))
    .toString(16)
    .padStart(SUFFIX, '0');
  if (base.length > MAX_NAME - SUFFIX) base = base.slice(0, MAX_NAME - SUFFIX);
  return base + digest;
}

export interface GuestLoadBalancerRequest {
  /** The cloud provider's --cluster-name (Rancher's UI: the guest cluster's name). */
  cluster: string;
  /**
   * The guest cluster it runs in (whose VMs carry guestcluster.harvesterhci.io/name), when
   * its chart values gave it another --cluster-name; default `cluster`.
   */
  guestCluster?: string;
  /** Its kubeconfig's namespace: the guest cluster's VMs' namespace on Harvester. */
  namespace: string;
  service: { namespace: string; name: string; uid?: string };
  /** The Service's cloudprovider.harvesterhci.io/ipam annotation (default pool). */
  ipam?: 'pool' | 'dhcp';
  /** The Service's cloudprovider.harvesterhci.io/network, …/project, …/namespace annotations. */
  network?: string;
  project?: string;
  poolNamespace?: string;
}

export type GuestLoadBalancer = LoadBalancer & KubeObject;

/**
 * Creates the load balancer as the cloud provider does (or finds the one it made for this
 * Service UID before) and waits up to `timeoutMs` for its address (the cloud provider
 * waits 10 × 1 s; the sandbox on a loaded machine may take longer). Refuses a cluster with
 * no VM in the namespace: no cloud provider runs there (and Harvester's webhook would
 * refuse the load balancer).
 */
export async function ensureGuestLoadBalancer(
  harvester: KubeClient,
  req: GuestLoadBalancerRequest,
  timeoutMs = 30_000,
): Promise<GuestLoadBalancer> {
  const vms = await harvester.list<KubeObject>(Resources.virtualMachine, {
    namespace: req.namespace,
    labelSelector: `${LABEL_GUEST_CLUSTER_NAME}=${req.guestCluster ?? req.cluster}`,
  });
  if (vms.items.length === 0)
    throw new Error(
      `guest cluster ${req.guestCluster ?? req.cluster} has no VM in ${req.namespace}: no cloud provider runs for it to make a load balancer`,
    );
  const uid = req.service.uid ?? crypto.randomUUID();
  const name = cloudProviderLbName(req.cluster, req.service.namespace, req.service.name, uid);
  const body: GuestLoadBalancer = {
    apiVersion: 'loadbalancer.harvesterhci.io/v1beta1',
    kind: 'LoadBalancer',
    metadata: {
      name,
      namespace: req.namespace,
      labels: {
        [LB_LABEL_CLUSTER]: req.cluster,
        [LB_LABEL_SERVICE_NAMESPACE]: req.service.namespace,
        [LB_LABEL_SERVICE_NAME]: req.service.name,
      },
      annotations: {
        [LB_ANNOTATION_NETWORK]: req.network ?? '',
        [LB_ANNOTATION_PROJECT]: req.project ?? '',
        [LB_ANNOTATION_NAMESPACE]: req.poolNamespace ?? '',
        [LB_ANNOTATION_CLUSTER]: req.cluster,
      },
    },
    spec: { ipam: req.ipam ?? 'pool', workloadType: 'cluster' },
  };
  try {
    await harvester.create<GuestLoadBalancer>(Resources.loadBalancer, body);
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
  }
  return waitFor<GuestLoadBalancer>(harvester, {
    type: Resources.loadBalancer,
    namespace: req.namespace,
    name,
    timeoutMs,
    description: `load balancer ${keyText(req.namespace, name)} to get an address`,
    until: (lb) => Boolean(lb?.status?.allocatedAddress?.ip),
    describeState: (lb) =>
      lb?.status?.conditions
        ?.map((c) => `${c.type}=${c.status}${c.message ? ` (${c.message})` : ''}`)
        .join(', ') || 'no address yet',
  }) as Promise<GuestLoadBalancer>;
}

/** An IP pool for the sandbox's guest clusters (Harvester's Networks > IP Pools). */
export async function ensureIpPool(
  harvester: KubeClient,
  opts: {
    name: string;
    subnet: string;
    rangeStart?: string;
    rangeEnd?: string;
    gateway?: string;
    scope?: { namespace?: string; guestCluster?: string };
  },
): Promise<void> {
  try {
    await harvester.create<KubeObject>(Resources.ipPool, {
      apiVersion: 'loadbalancer.harvesterhci.io/v1beta1',
      kind: 'IPPool',
      metadata: { name: opts.name },
      spec: {
        ranges: [
          {
            subnet: opts.subnet,
            ...(opts.rangeStart ? { rangeStart: opts.rangeStart } : {}),
            ...(opts.rangeEnd ? { rangeEnd: opts.rangeEnd } : {}),
            ...(opts.gateway ? { gateway: opts.gateway } : {}),
          },
        ],
        selector: {
          scope: [
            {
              namespace: opts.scope?.namespace ?? '*',
              guestCluster: opts.scope?.guestCluster ?? '*',
              project: '*',
            },
          ],
        },
      },
    } as KubeObject);
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
  }
}
