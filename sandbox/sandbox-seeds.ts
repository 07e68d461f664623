// What a fresh Harvester has that the driver relies on, and who may use it: the objects a
// machine pool points at (an image, a VLAN network, a key pair, storage classes) and the
// least-privilege roles the driver's credential needs. Harvester's own `harvester` writes its
// settings (server-version among them) itself at start.
import crypto from 'node:crypto';
import type { KubeClient } from '../src/kube/client.js';
import { isAlreadyExists } from '../src/kube/errors.js';
import { Resources, type KubeObject } from '../src/kube/resources.js';

export const SEED_NAMESPACE = 'default';
export const SEED_IMAGE = 'image-ubuntu';
export const SEED_NETWORK = 'vlan1';
/** A VLAN network with no DHCP server (harvester#9810): machines there need fixed addresses. */
export const SEED_STATIC_NETWORK = 'vlan100';
/** Its subnet, router and DNS server, as the data centre would give them to the operator. */
export const SEED_STATIC_SUBNET = {
  cidr: '192.168.100.0/24',
  gateway: '192.168.100.1',
  dns: '192.168.100.1',
} as const;
export const SEED_KEYPAIR = 'sandbox-key';
/** Namespaced rules, bound per namespace the driver works in. */
export const DRIVER_ROLE = 'harvester-machine-driver';
/** Cluster-scoped reads, bound cluster-wide. */
export const DRIVER_CLUSTER_ROLE = 'harvester-machine-driver-cluster';

/**
 * Exactly what the driver does (src/harvester-access/harvester-api.ts) and what Rancher's cleanup
 * handler does with the same credential (an Update of the VM), and what the cleanup
 * controller does with it (label the guest cluster's host volumes; after a whole-cluster
 * deletion list and delete its load balancers and the volumes its VMs' removals left):
 * nothing else.
 */
export const DRIVER_RULES = [
  {
    apiGroups: ['kubevirt.io'],
    resources: ['virtualmachines'],
    verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
  },
  { apiGroups: ['kubevirt.io'], resources: ['virtualmachineinstances'], verbs: ['get', 'list', 'watch'] },
  {
    apiGroups: ['subresources.kubevirt.io'],
    resources: ['virtualmachines/start', 'virtualmachines/stop', 'virtualmachines/restart'],
    verbs: ['update'],
  },
  // Volumes: read to plan a removal, delete the ones a whole-cluster removal owns; the cleanup
  // controller labels each with its guest cluster (patch) and, once a deleted cluster's last VM
  // is gone, checks that no pod uses one before it deletes it.
  {
    apiGroups: [''],
    resources: ['persistentvolumeclaims'],
    verbs: ['get', 'list', 'watch', 'patch', 'delete'],
  },
  { apiGroups: [''], resources: ['pods'], verbs: ['list'] },
  // The cloud-init Secret of a VM (user data over 2048 bytes).
  { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'create', 'update'] },
  // The address claims of --harvester-ip-pool-info.
  { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'create', 'patch', 'delete'] },
  // Harvester's IP pools (vm-dhcp-controller): the pool of a network, the VM's address binding.
  { apiGroups: ['network.harvesterhci.io'], resources: ['ippools'], verbs: ['get'] },
  {
    apiGroups: ['network.harvesterhci.io'],
    resources: ['virtualmachinenetworkconfigs'],
    verbs: ['get', 'list', 'watch'],
  },
  { apiGroups: ['harvesterhci.io'], resources: ['virtualmachineimages', 'keypairs'], verbs: ['get'] },
  { apiGroups: ['k8s.cni.cncf.io'], resources: ['network-attachment-definitions'], verbs: ['get'] },
  {
    apiGroups: ['loadbalancer.harvesterhci.io'],
    resources: ['loadbalancers'],
    verbs: ['get', 'list', 'delete'],
  },
];

export const DRIVER_CLUSTER_RULES = [
  { apiGroups: ['harvesterhci.io'], resources: ['settings'], verbs: ['get'] },
  { apiGroups: ['storage.k8s.io'], resources: ['storageclasses'], verbs: ['get'] },
  // The pre-create check of --harvester-host-device-info (optional: without it the check is skipped).
  {
    apiGroups: ['devices.harvesterhci.io'],
    resources: ['pcidevices', 'pcideviceclaims', 'usbdevices'],
    verbs: ['list'],
  },
];

async function createIfAbsent<T extends KubeObject>(
  client: KubeClient,
  type: Parameters<KubeClient['create']>[0],
  obj: T,
): Promise<void> {
  try {
    await client.create<T>(type, obj);
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
  }
}

/** An ed25519 key pair; the public half in OpenSSH's one-line format. */
export function sandboxSshKey(): { publicKey: string; privateKeyPem: string } {
  const { publicKey, privateKey } = crypto.generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  const field = (b: Buffer): Buffer => Buffer.concat([Buffer.from([0, 0, 0, b.length]), b]);
  const wire = Buffer.concat([field(Buffer.from('ssh-ed25519')), field(raw)]);
  return {
    publicKey: `ssh-ed25519 ${wire.toString('base64')} harvester-machine-sandbox`,
    privateKeyPem: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
  };
}

const rbac = (kind: string, body: Record<string, unknown>): KubeObject =>
  ({ apiVersion: 'rbac.authorization.k8s.io/v1', kind, ...body }) as unknown as KubeObject;

export async function seedDriverRoles(admin: KubeClient): Promise<void> {
  await createIfAbsent(
    admin,
    Resources.clusterRole,
    rbac('ClusterRole', { metadata: { name: DRIVER_ROLE }, rules: DRIVER_RULES }),
  );
  await createIfAbsent(
    admin,
    Resources.clusterRole,
    rbac('ClusterRole', { metadata: { name: DRIVER_CLUSTER_ROLE }, rules: DRIVER_CLUSTER_RULES }),
  );
}

/** Lets a user drive machines in these namespaces (and read the cluster-wide settings it needs). */
export async function grantDriverAccess(
  admin: KubeClient,
  username: string,
  namespaces: string[],
): Promise<void> {
  const id = crypto.createHash('sha256').update(username).digest('hex').slice(0, 10);
  const subjects = [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: username }];
  await createIfAbsent(
    admin,
    Resources.clusterRoleBinding,
    rbac('ClusterRoleBinding', {
      metadata: { name: `${DRIVER_CLUSTER_ROLE}-${id}` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: DRIVER_CLUSTER_ROLE },
      subjects,
    }),
  );
  for (const namespace of namespaces) {
    await createIfAbsent(
      admin,
      Resources.roleBinding,
      rbac('RoleBinding', {
        metadata: { name: `${DRIVER_ROLE}-${id}`, namespace },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: DRIVER_ROLE },
        subjects,
      }),
    );
  }
}

/** A VM network as Harvester's UI makes one: a VLAN on the management cluster network, no IPAM. */
export function vlanNetwork(namespace: string, name: string, vlan: number): KubeObject {
  return {
    apiVersion: 'k8s.cni.cncf.io/v1',
    kind: 'NetworkAttachmentDefinition',
    metadata: {
      name,
      namespace,
      labels: {
        'network.harvesterhci.io/type': 'L2VlanNetwork',
        'network.harvesterhci.io/clusternetwork': 'mgmt',
        'network.harvesterhci.io/vlan-id': String(vlan),
      },
    },
    spec: {
      config: JSON.stringify({
        cniVersion: '0.3.1',
        name,
        type: 'bridge',
        bridge: 'mgmt-br',
        promiscMode: true,
        vlan,
        ipam: {},
      }),
    },
  } as KubeObject;
}

/**
 * The objects a machine pool refers to; the stand-ins (or Harvester's own controllers) then import
 * the image from `imageUrl` (the sandbox's image server on 127.0.0.1) and validate the key.
 */
export async function seedHarvester(admin: KubeClient, publicKey: string, imageUrl: string): Promise<void> {
  const ns = SEED_NAMESPACE;
  await createIfAbsent(admin, Resources.storageClass, {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name: 'longhorn' },
    provisioner: 'driver.longhorn.io',
    allowVolumeExpansion: true,
    reclaimPolicy: 'Delete',
    volumeBindingMode: 'Immediate',
    parameters: { numberOfReplicas: '3', staleReplicaTimeout: '30', migratable: 'true' },
  } as KubeObject);
  await createIfAbsent(admin, Resources.virtualMachineImage, {
    apiVersion: 'harvesterhci.io/v1beta1',
    kind: 'VirtualMachineImage',
    metadata: { name: SEED_IMAGE, namespace: ns },
    spec: {
      displayName: 'ubuntu-22.04-server-cloudimg-amd64.img',
      sourceType: 'download',
      url: imageUrl,
    },
  } as KubeObject);
  await seedNetworks(admin);
  await createIfAbsent(admin, Resources.keyPair, {
    apiVersion: 'harvesterhci.io/v1beta1',
    kind: 'KeyPair',
    metadata: { name: SEED_KEYPAIR, namespace: ns },
    spec: { publicKey },
  } as KubeObject);
}

/** The VM networks the sandbox's machines attach to (virt-controller refuses a VM whose network is missing). */
export async function seedNetworks(admin: KubeClient, ns = SEED_NAMESPACE): Promise<void> {
  await createIfAbsent(admin, Resources.networkAttachmentDefinition, vlanNetwork(ns, SEED_NETWORK, 1));
  await createIfAbsent(
    admin,
    Resources.networkAttachmentDefinition,
    vlanNetwork(ns, SEED_STATIC_NETWORK, 100),
  );
}
