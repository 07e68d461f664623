// The sandbox's one Node as the kubelet and virt-handler present it (docs/upstream/kubevirt.md#the-node):
// - the kubelet: its well-known labels, capacity and allocatable (cpu, memory, pods, and one
//   extended resource per device a device plugin registered), the Ready condition;
// - virt-handler: `kubevirt.io/schedulable`, the machine types and CPU model its node labeller
//   finds, its heartbeat annotation, and its own device plugins' resources (kvm, tun, vhost-net:
//   1000 units each, virt-handler's permanent plugins).
// - harvester-network-controller's manager: `network.harvesterhci.io/mgmt: "true"` on every node
//   (the management cluster network every node has; pkg/controller/manager/node ensureMgmtLabels).
// virt-controller renders launcher pods with a node selector on the schedulable label, the
// architecture and the machine type (services/nodeselectorrenderer.go): this node matches them.
// Harvester's VM mutator adds a required node affinity on `network.harvesterhci.io/<cluster
// network>` for each VLAN network a VM uses (the sandbox's are on `mgmt`): this node matches it.
import type { Node, NodeCondition } from '../../../src/api/core.js';
import { SANDBOX_NODE } from '../names.js';

export const NodeLabels = {
  schedulable: 'kubevirt.io/schedulable',
  heartbeat: 'kubevirt.io/heartbeat',
} as const;

/** Big enough for every story here: one node stands for a whole Harvester cluster. */
const BASE_CAPACITY: Record<string, string> = {
  cpu: '512',
  memory: '2Ti',
  pods: '1000',
  'ephemeral-storage': '2Ti',
  'hugepages-1Gi': '0',
  'hugepages-2Mi': '0',
  'devices.kubevirt.io/kvm': '1k',
  'devices.kubevirt.io/tun': '1k',
  'devices.kubevirt.io/vhost-net': '1k',
};

export function nodeLabels(): Record<string, string> {
  return {
    'kubernetes.io/hostname': SANDBOX_NODE,
    'kubernetes.io/os': 'linux',
    'kubernetes.io/arch': 'amd64',
    'beta.kubernetes.io/os': 'linux',
    'beta.kubernetes.io/arch': 'amd64',
    'node-role.kubernetes.io/control-plane': 'true',
    [NodeLabels.schedulable]: 'true',
    'machine-type.node.kubevirt.io/q35': 'true',
    'machine-type.node.kubevirt.io/pc-q35-rhel9.6.0': 'true',
    'cpu-model.node.kubevirt.io/Skylake-Server-IBRS': 'true',
    'host-model-cpu.node.kubevirt.io/Skylake-Server-IBRS': 'true',
    'cpu-vendor.node.kubevirt.io/Intel': 'true',
    'kubevirt.io/ksm-enabled': 'false',
    'network.harvesterhci.io/mgmt': 'true',
  };
}

/** Capacity = allocatable here (nothing reserved): the base plus each device plugin's units. */
export function nodeResources(devices: Map<string, string[]>): Record<string, string> {
  const resources = { ...BASE_CAPACITY };
  for (const [resource, units] of [...devices].sort(([a], [b]) => a.localeCompare(b)))
    resources[resource] = String(units.length);
  return resources;
}

export function sandboxNode(devices: Map<string, string[]>, now: string): Node {
  const resources = nodeResources(devices);
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: SANDBOX_NODE, labels: nodeLabels(), annotations: { [NodeLabels.heartbeat]: now } },
    spec: {},
    status: {
      capacity: resources,
      allocatable: resources,
      conditions: [readyCondition(now)],
      addresses: [
        { type: 'InternalIP', address: '127.0.0.1' },
        { type: 'Hostname', address: SANDBOX_NODE },
      ],
      nodeInfo: {
        architecture: 'amd64',
        operatingSystem: 'linux',
        osImage: 'Harvester v1.8.0',
        kubeletVersion: 'v1.33.13',
        kernelVersion: '6.4.0',
        containerRuntimeVersion: 'containerd://2.0.0',
        bootID: '',
        machineID: '',
        systemUUID: '',
        kubeProxyVersion: '',
      },
    },
  };
}

export function readyCondition(now: string): NodeCondition {
  return {
    type: 'Ready',
    status: 'True',
    reason: 'KubeletReady',
    message: 'kubelet is posting ready status',
    lastHeartbeatTime: now,
    lastTransitionTime: now,
  };
}
