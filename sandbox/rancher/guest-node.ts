// A guest cluster's node joining it, as the sandbox plays the guest: the Node object, in the
// apiserver the cluster's `<cluster>-kubeconfig` names, with the providerID an RKE2 node gets
// without a cloud provider (`rke2://<hostname>`), Rancher's label naming its CAPI Machine
// (capr.MachineUIDLabel, which machinenodelookup selects on) and a Ready kubelet. Cluster API
// finds it by providerID, sets the Machine's nodeRef, drains it before a scale-down and deletes
// it after the machine's infrastructure is gone.
import { isAlreadyExists, type KubeClient } from '../../src/kube/index.js';
import type { KubeObject } from '../../src/kube/resources.js';
import { SandboxResources } from '../capi/resources.js';

/** Rancher's label on a guest node naming its CAPI Machine's uid. */
export const LABEL_NODE_MACHINE_UID = 'rke.cattle.io/machine';

/** Registers (idempotently) and resolves with the node's providerID. */
export async function registerGuestNode(
  downstream: KubeClient,
  node: { hostname: string; machineUid: string; addresses: Array<{ type: string; address: string }> },
): Promise<string> {
  const { hostname } = node;
  const providerID = `rke2://${hostname}`;
  try {
    await downstream.create(SandboxResources.node, {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: hostname,
        labels: {
          [LABEL_NODE_MACHINE_UID]: node.machineUid,
          'kubernetes.io/hostname': hostname,
          'node-role.kubernetes.io/worker': 'true',
        },
      },
      spec: { providerID },
    } as KubeObject);
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
  }
  await downstream.patch(
    SandboxResources.node,
    { name: hostname, subresource: 'status' },
    {
      status: {
        conditions: [
          {
            type: 'Ready',
            status: 'True',
            reason: 'KubeletReady',
            message: 'kubelet is posting ready status',
          },
        ],
        addresses: [{ type: 'Hostname', address: hostname }, ...node.addresses],
      },
    },
  );
  return providerID;
}
