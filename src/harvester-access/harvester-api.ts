// One Harvester cluster as the driver, the CLI and the controller see it: typed reads and
// writes of the objects they touch, every call through the one KubeClient (src/kube), and,
// for the driver (given where its credential came from), a rejected credential turned into
// CredentialRejectedError at this single place (so no operation can forget it).
import { KubeClient, type KubeClientOptions } from '../kube/client.js';
import type { KubeconfigTrust } from '../kube/credential-content.js';
import { admissionDenial, isCredentialRejected, isNotFound } from '../kube/errors.js';
import {
  Resources,
  describeOperation,
  qualifiedName,
  resourcePath,
  resourceType,
  type KubeObject,
  type ResourceType,
} from '../kube/resources.js';
import { waitFor, type WaitSpec } from '../kube/wait.js';
import type {
  PersistentVolumeClaim,
  Secret,
  VirtualMachine,
  VirtualMachineInstance,
} from '../harvester/types.js';
import type { LoadBalancer } from '../harvester/load-balancers.js';
import type { DeleteAnswer, ListRead } from '../harvester/removal-scope.js';
import type { ConfigMapObject } from '../harvester/fixed-addresses/address-claims.js';
import type { VmDhcpIpPool, VmNetworkConfig } from '../harvester/fixed-addresses/vm-dhcp.js';
import { CredentialRejectedError, credentialRejected, type CredentialSource } from './credential-error.js';
import { keyText } from '../api/object-key.js';

/** Harvester's vm-dhcp-controller add-on (docs/upstream/vm-dhcp-controller.md#resources). */
export const VmDhcpResources = {
  ipPool: resourceType('network.harvesterhci.io', 'v1alpha1', 'ippools', 'IPPool'),
  networkConfig: resourceType(
    'network.harvesterhci.io',
    'v1alpha1',
    'virtualmachinenetworkconfigs',
    'VirtualMachineNetworkConfig',
  ),
} as const;

export type ConfigMap = ConfigMapObject & KubeObject;

/** The host-device kinds of Harvester's pcidevices add-on, by the name callers use. */
const HOST_DEVICE_TYPES = {
  pciDevice: Resources.pciDevice,
  pciDeviceClaim: Resources.pciDeviceClaim,
  usbDevice: Resources.usbDevice,
} as const;
export type HostDeviceKind = keyof typeof HOST_DEVICE_TYPES;

/** The qualified name of a host-device kind (plural.group), for messages. */
export const hostDeviceKindName = (kind: HostDeviceKind): string => qualifiedName(HOST_DEVICE_TYPES[kind]);

/** The kinds the driver waits on. */
const WAIT_TYPES = {
  vm: Resources.virtualMachine,
  vmi: Resources.virtualMachineInstance,
  vmNetworkConfig: VmDhcpResources.networkConfig,
} as const;
export type WaitKind = keyof typeof WAIT_TYPES;

export type VmAction = 'start' | 'stop' | 'restart';

export interface Setting extends KubeObject {
  value?: string;
  default?: string;
}
export interface VirtualMachineImage extends KubeObject {
  spec?: { displayName?: string };
  status?: { storageClassName?: string; progress?: number };
}
export interface KeyPair extends KubeObject {
  spec?: { publicKey?: string };
  status?: { conditions?: Array<{ type: string; status: string; message?: string }> };
}

/** Harvester objects as the API returns them: our typed shapes plus KubeObject metadata. */
export type Vm = VirtualMachine & KubeObject;
export type Vmi = VirtualMachineInstance & KubeObject;
export type Pvc = PersistentVolumeClaim & KubeObject;

const ref = (m: { namespace?: string; name?: string }): string => keyText(m.namespace, m.name);

export class HarvesterApi {
  /**
   * What this operation has changed on Harvester so far, so that a credential refused half-way
   * says so instead of claiming that nothing changed (one HarvesterApi per operation: forOperation).
   */
  private readonly changes: string[] = [];

  constructor(
    readonly client: KubeClient,
    /** Where the credential came from; without it a refused credential stays the KubeError it is. */
    private readonly source?: CredentialSource,
  ) {}

  /** A view for one operation: the same client, its own record of changes. */
  forOperation(): HarvesterApi {
    return new HarvesterApi(this.client, this.source);
  }

  static fromKubeconfig(
    content: string,
    source: CredentialSource | undefined,
    options: KubeClientOptions & { trust?: KubeconfigTrust } = {},
  ): HarvesterApi {
    return new HarvesterApi(KubeClient.fromKubeconfig(content, options), source);
  }

  get server(): string {
    return this.client.server;
  }

  /** Runs a call; a refused credential becomes the one error that says what to renew. */
  async guard<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (err) {
      if (this.source !== undefined && isCredentialRejected(err))
        throw credentialRejected(err, this.source, new Date(), this.changes);
      throw err;
    }
  }

  /** A guarded write, remembered once it succeeded (unless `changed` says it changed nothing). */
  private async write<T>(change: string, call: () => Promise<T>, changed = (_: T) => true): Promise<T> {
    const result = await this.guard(call);
    if (changed(result)) this.changes.push(change);
    return result;
  }

  findVm(namespace: string, name: string): Promise<Vm | undefined> {
    return this.guard(() => this.client.find<Vm>(Resources.virtualMachine, { namespace, name }));
  }

  findVmi(namespace: string, name: string): Promise<Vmi | undefined> {
    return this.guard(() => this.client.find<Vmi>(Resources.virtualMachineInstance, { namespace, name }));
  }

  /**
   * The namespace's VMs (every namespace's when undefined); with a label selector, only those it
   * selects; as `read` says (default consistent).
   */
  async listVms(
    namespace: string | undefined,
    labelSelector?: string,
    read: ListRead = 'consistent',
  ): Promise<Vm[]> {
    const opts = {
      ...(namespace !== undefined ? { namespace } : {}),
      ...(labelSelector !== undefined ? { labelSelector } : {}),
      ...(read === 'cached' ? { resourceVersion: '0' } : {}),
      ...(typeof read === 'object'
        ? { resourceVersion: read.notOlderThan, resourceVersionMatch: 'NotOlderThan' as const }
        : {}),
    };
    return (await this.guard(() => this.client.list<Vm>(Resources.virtualMachine, opts))).items;
  }

  /** Objects of a namespaced kind in `namespace`, or in every namespace when undefined. */
  private async listIn<T extends KubeObject>(
    type: ResourceType,
    namespace: string | undefined,
    labelSelector?: string,
  ): Promise<T[]> {
    const opts = {
      ...(namespace !== undefined ? { namespace } : {}),
      ...(labelSelector !== undefined ? { labelSelector } : {}),
    };
    return (await this.guard(() => this.client.list<T>(type, opts))).items;
  }

  /** The namespace's PVCs (every namespace's when undefined); with a label selector, only those it selects. */
  listPvcs(namespace: string | undefined, labelSelector?: string): Promise<Pvc[]> {
    return this.listIn<Pvc>(Resources.pvc, namespace, labelSelector);
  }

  /**
   * A merge patch of a PVC's labels and annotations (null removes a key); with a resourceVersion,
   * only on that version (a Conflict otherwise).
   */
  patchPvcMetadata(
    namespace: string,
    name: string,
    metadata: {
      resourceVersion?: string | undefined;
      labels?: Record<string, string | null>;
      annotations?: Record<string, string | null>;
    },
  ): Promise<Pvc> {
    return this.write(`labelled PVC ${keyText(namespace, name)}`, () =>
      this.client.patch<Pvc>(Resources.pvc, { namespace, name }, { metadata }),
    );
  }

  /** The namespace's VM instances (every namespace's when undefined). */
  listVmis(namespace: string | undefined): Promise<Vmi[]> {
    return this.listIn<Vmi>(Resources.virtualMachineInstance, namespace);
  }

  /** The namespace's pods (every namespace's when undefined): who mounts a volume. */
  listPods(namespace: string | undefined): Promise<KubeObject[]> {
    return this.listIn<KubeObject>(Resources.pod, namespace);
  }

  /** The namespace's events (every namespace's when undefined). */
  listEvents(namespace: string | undefined): Promise<KubeObject[]> {
    return this.listIn<KubeObject>(Resources.event, namespace);
  }

  /** The names of the cluster's namespaces. */
  async listNamespaceNames(): Promise<string[]> {
    return (await this.listAll<KubeObject>(Resources.namespace)).map((n) => n.metadata.name ?? '');
  }

  findPvc(namespace: string, name: string): Promise<Pvc | undefined> {
    return this.guard(() => this.client.find<Pvc>(Resources.pvc, { namespace, name }));
  }

  /** The namespace's Harvester load balancers (every namespace's when undefined). */
  listLoadBalancers(namespace: string | undefined): Promise<Array<LoadBalancer & KubeObject>> {
    return this.listIn<LoadBalancer & KubeObject>(Resources.loadBalancer, namespace);
  }

  findLoadBalancer(namespace: string, name: string): Promise<(LoadBalancer & KubeObject) | undefined> {
    return this.guard(() =>
      this.client.find<LoadBalancer & KubeObject>(Resources.loadBalancer, { namespace, name }),
    );
  }

  /** Deletes only the load balancer listed (uid precondition when given); false when already gone. */
  deleteLoadBalancer(namespace: string, name: string, uid?: string): Promise<boolean> {
    return this.write(
      `deleted load balancer ${keyText(namespace, name)}`,
      () =>
        this.client.delete(
          Resources.loadBalancer,
          { namespace, name },
          uid ? { preconditions: { uid } } : {},
        ),
      (deleted) => deleted,
    );
  }

  findSetting(name: string): Promise<Setting | undefined> {
    return this.guard(() => this.client.find<Setting>(Resources.setting, { name }));
  }

  findImage(namespace: string, name: string): Promise<VirtualMachineImage | undefined> {
    return this.guard(() =>
      this.client.find<VirtualMachineImage>(Resources.virtualMachineImage, { namespace, name }),
    );
  }

  findKeyPair(namespace: string, name: string): Promise<KeyPair | undefined> {
    return this.guard(() => this.client.find<KeyPair>(Resources.keyPair, { namespace, name }));
  }

  findNetwork(namespace: string, name: string): Promise<KubeObject | undefined> {
    return this.guard(() => this.client.find(Resources.networkAttachmentDefinition, { namespace, name }));
  }

  /** A vm-dhcp-controller IPPool; undefined when absent (or the add-on is not installed). */
  async findVmDhcpIpPool(namespace: string, name: string): Promise<(VmDhcpIpPool & KubeObject) | undefined> {
    try {
      return await this.guard(() =>
        this.client.find<VmDhcpIpPool & KubeObject>(VmDhcpResources.ipPool, { namespace, name }),
      );
    } catch (err) {
      // find() answers undefined for a missing object; a missing resource type is a 404 too.
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  findVmNetworkConfig(namespace: string, name: string): Promise<(VmNetworkConfig & KubeObject) | undefined> {
    return this.guard(() =>
      this.client.find<VmNetworkConfig & KubeObject>(VmDhcpResources.networkConfig, { namespace, name }),
    );
  }

  /** The namespace's vm-dhcp-controller VirtualMachineNetworkConfigs (which VM has which MAC). */
  listVmNetworkConfigs(namespace: string): Promise<Array<VmNetworkConfig & KubeObject>> {
    return this.listIn<VmNetworkConfig & KubeObject>(VmDhcpResources.networkConfig, namespace);
  }

  /** The namespace's ConfigMaps (every namespace's when undefined) with these labels (the address claims). */
  listConfigMaps(namespace: string | undefined, labelSelector: string): Promise<ConfigMap[]> {
    return this.listIn<ConfigMap>(Resources.configMap, namespace, labelSelector);
  }

  findConfigMap(namespace: string, name: string): Promise<ConfigMap | undefined> {
    return this.guard(() => this.client.find<ConfigMap>(Resources.configMap, { namespace, name }));
  }

  createConfigMap(cm: ConfigMapObject): Promise<ConfigMap> {
    return this.write(`created ConfigMap ${ref(cm.metadata)}`, () =>
      this.client.create<ConfigMap>(Resources.configMap, cm as ConfigMap),
    );
  }

  /** Sets the owner references, only on the version read (a Conflict otherwise). */
  setConfigMapOwner(
    cm: ConfigMap,
    owners: NonNullable<KubeObject['metadata']['ownerReferences']>,
  ): Promise<ConfigMap> {
    const { namespace, name, resourceVersion } = cm.metadata;
    return this.write(`set the owner of ConfigMap ${ref(cm.metadata)}`, () =>
      this.client.patch<ConfigMap>(
        Resources.configMap,
        { namespace: namespace ?? '', name: name ?? '' },
        { metadata: { resourceVersion, ownerReferences: owners } },
      ),
    );
  }

  /** Deletes only the ConfigMap read (uid, and resourceVersion when given); false when already gone. */
  deleteConfigMap(cm: ConfigMap, options: { sameVersion?: boolean } = {}): Promise<boolean> {
    const { namespace, name, uid, resourceVersion } = cm.metadata;
    const preconditions = {
      ...(uid ? { uid } : {}),
      ...(options.sameVersion && resourceVersion ? { resourceVersion } : {}),
    };
    return this.write(
      `deleted ConfigMap ${ref(cm.metadata)}`,
      () =>
        this.client.delete(
          Resources.configMap,
          { namespace: namespace ?? '', name: name ?? '' },
          Object.keys(preconditions).length > 0 ? { preconditions } : {},
        ),
      (deleted) => deleted,
    );
  }

  /** Deletes the ConfigMap only as it was listed (this uid and resourceVersion); false when already gone. */
  deleteListedConfigMap(cm: {
    namespace: string;
    name: string;
    uid: string;
    resourceVersion: string;
  }): Promise<boolean> {
    const { namespace, name, uid, resourceVersion } = cm;
    return this.write(
      `deleted ConfigMap ${keyText(namespace, name)}`,
      () =>
        this.client.delete(
          Resources.configMap,
          { namespace, name },
          { preconditions: { uid, resourceVersion } },
        ),
      (deleted) => deleted,
    );
  }

  findStorageClass(name: string): Promise<KubeObject | undefined> {
    return this.guard(() => this.client.find(Resources.storageClass, { name }));
  }

  /** Every object of a cluster-scoped kind (the pcidevices add-on's devices and claims). */
  private async listAll<T extends KubeObject>(type: ResourceType): Promise<T[]> {
    return (await this.guard(() => this.client.list<T>(type))).items;
  }

  /** Every object of one of Harvester's host-device kinds (the pcidevices add-on). */
  listHostDevices<T extends KubeObject>(kind: HostDeviceKind): Promise<T[]> {
    return this.listAll<T>(HOST_DEVICE_TYPES[kind]);
  }

  createVm(vm: VirtualMachine): Promise<Vm> {
    return this.write(`created VM ${ref(vm.metadata)}`, () =>
      this.client.create<Vm>(Resources.virtualMachine, vm as Vm),
    );
  }

  createSecret(secret: Secret): Promise<Secret & KubeObject> {
    return this.write(`created Secret ${ref(secret.metadata)}`, () =>
      this.client.create<Secret & KubeObject>(Resources.secret, secret as Secret & KubeObject),
    );
  }

  updateSecret(secret: Secret): Promise<Secret & KubeObject> {
    return this.write(`updated Secret ${ref(secret.metadata)}`, () =>
      this.client.update<Secret & KubeObject>(Resources.secret, secret as Secret & KubeObject),
    );
  }

  findSecret(namespace: string, name: string): Promise<(Secret & KubeObject) | undefined> {
    return this.guard(() => this.client.find<Secret & KubeObject>(Resources.secret, { namespace, name }));
  }

  /**
   * A merge patch carrying the resourceVersion read: Conflict when someone changed the VM since;
   * with `anyVersion`, of these keys only, whatever the VM's version.
   */
  patchVmAnnotations(
    vm: Pick<Vm, 'metadata'>,
    annotations: Record<string, string | null>,
    options: { anyVersion?: boolean } = {},
  ): Promise<Vm> {
    const { namespace, name, resourceVersion } = vm.metadata;
    const metadata = options.anyVersion ? { annotations } : { resourceVersion, annotations };
    return this.write(`annotated VM ${ref(vm.metadata)} (${Object.keys(annotations).join(', ')})`, () =>
      this.client.patch<Vm>(
        Resources.virtualMachine,
        { namespace: namespace ?? '', name: name ?? '' },
        { metadata },
      ),
    );
  }

  /** Foreground deletion, only of the VM we read (uid precondition); false when already gone. */
  /**
   * Foreground deletion, only of the VM we read (uid precondition). Returns the VM as it is
   * being deleted (with its finalizers and resourceVersion), 'deleted' or 'gone'.
   */
  deleteVm(vm: Pick<Vm, 'metadata'>): Promise<Vm | 'deleted' | 'gone'> {
    const { namespace, name, uid } = vm.metadata;
    return this.write(
      `started deleting VM ${ref(vm.metadata)}`,
      () =>
        this.client.deleteObject<Vm>(
          Resources.virtualMachine,
          { namespace: namespace ?? '', name: name ?? '' },
          { propagationPolicy: 'Foreground', ...(uid ? { preconditions: { uid } } : {}) },
        ),
      (deleted) => deleted !== 'gone',
    );
  }

  deletePvc(namespace: string, name: string, uid?: string): Promise<boolean> {
    return this.write(
      `deleted PVC ${keyText(namespace, name)}`,
      () => this.client.delete(Resources.pvc, { namespace, name }, uid ? { preconditions: { uid } } : {}),
      (deleted) => deleted,
    );
  }

  /**
   * Would Harvester delete this PVC now? A dry-run delete of the PVC as read (uid
   * precondition): kube-apiserver runs it through admission, where Harvester's PVC webhook
   * (declared without side effects, so called on dry runs) refuses a PVC a VM not being
   * deleted names. Nothing is deleted. A webhook's refusal is 'refused' with its words; a PVC
   * already gone is 'allowed' (nothing left to keep); anything else that is no answer of the
   * webhook (no permission, the webhook unreachable, the PVC replaced) is 'unknown'. A refused
   * credential still fails, as every call does.
   */
  async askToDeletePvc(namespace: string, pvc: PersistentVolumeClaim): Promise<DeleteAnswer> {
    const { name, uid } = pvc.metadata;
    try {
      await this.guard(() =>
        this.client.delete(
          Resources.pvc,
          { namespace, name },
          { dryRun: true, ...(uid ? { preconditions: { uid } } : {}) },
        ),
      );
      return { kind: 'allowed' };
    } catch (err) {
      const denial = admissionDenial(err);
      if (denial) return { kind: 'refused', reason: denial.message || `refused by ${denial.webhook}` };
      if (err instanceof CredentialRejectedError) throw err;
      return { kind: 'unknown' };
    }
  }

  /** KubeVirt's subresource API (virt-api): PUT with no body; 202 on success. */
  vmAction(namespace: string, name: string, action: VmAction): Promise<unknown> {
    const type: ResourceType = {
      group: 'subresources.kubevirt.io',
      version: 'v1',
      plural: 'virtualmachines',
      kind: 'VirtualMachine',
      namespaced: true,
    };
    const at = { namespace, name, subresource: action };
    return this.write(`asked KubeVirt to ${action} VM ${keyText(namespace, name)}`, () =>
      this.client.call({
        method: 'PUT',
        path: resourcePath(type, at),
        operation: describeOperation('put', type, at),
      }),
    );
  }

  /** Watches one object of a kind the driver waits on until `spec` says it is done (src/kube/wait.ts). */
  wait<T extends KubeObject>(kind: WaitKind, spec: Omit<WaitSpec<T>, 'type'>): Promise<T | undefined> {
    return this.guard(() => waitFor(this.client, { ...spec, type: WAIT_TYPES[kind] }));
  }

  close(): void {
    this.client.close();
  }
}
