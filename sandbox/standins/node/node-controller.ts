// Keeps the sandbox's Node as its kubelet and virt-handler would: created once with their labels
// and capacity (node-object.ts), its allocatable in line with what the device plugins offer (the
// pcidevices add-on's, as devices are enabled or released), and virt-handler's heartbeat fresh:
// virt-controller's node controller takes a node whose heartbeat is older than 5 minutes for
// one without virt-handler and fails its VMIs (pkg/virt-controller/watch/node). It also does the
// one thing kube-controller-manager's node lifecycle controller (not run here) does for a Ready
// node: it lifts the `node.kubernetes.io/not-ready` taint the apiserver puts on every new Node
// (admission plugin TaintNodesByCondition), which kube-scheduler would not place pods past.
import { isKubeError } from '../../../src/kube/errors.js';
import type { StandInContext } from '../context.js';
import { SANDBOX_NODE } from '../names.js';
import { Reconciler, nowIso, sameJson } from '../runtime.js';
import { SandboxResources } from '../../capi/resources.js';
import { updateWithRetry } from '../writes.js';
import { NodeLabels, nodeResources, readyCondition, sandboxNode, type NodeObject } from './node-object.js';

/** virt-handler's heartbeat period (pkg/virt-handler/heartbeat). */
const HEARTBEAT_MS = 60_000;
const NOT_READY_TAINT = 'node.kubernetes.io/not-ready';

export interface DeviceOffer {
  /** Each resource a device plugin registered on the node, with the devices behind it. */
  offered(node: string): Map<string, string[]>;
  /** Calls back whenever what is offered may have changed. */
  onChange(listener: () => void): void;
}

export function nodeController(ctx: StandInContext, offer: DeviceOffer): Reconciler {
  const nodes = ctx.informers.get<NodeObject>(SandboxResources.node);
  let lastBeat = 0;

  const reconciler = new Reconciler(
    'node',
    async () => {
      const devices = offer.offered(SANDBOX_NODE);
      const node = nodes.get(SANDBOX_NODE);
      if (!node) {
        try {
          const made = await ctx.client.create<NodeObject>(
            SandboxResources.node,
            sandboxNode(devices, nowIso()),
          );
          // status is a subresource: the kubelet posts it in a second call.
          await ctx.client.update<NodeObject>(
            SandboxResources.node,
            { ...made, status: sandboxNode(devices, nowIso()).status },
            'status',
          );
          lastBeat = Date.now();
        } catch (err) {
          if (!isKubeError(err, 'AlreadyExists')) throw err;
        }
        return { requeueAfterMs: HEARTBEAT_MS };
      }
      const taints = (node.spec?.taints as Array<{ key: string }> | undefined) ?? [];
      if (taints.some((t) => t.key === NOT_READY_TAINT)) {
        await updateWithRetry(ctx.client, SandboxResources.node, node, { name: SANDBOX_NODE }, (n) => ({
          ...n,
          spec: {
            ...n.spec,
            taints: ((n.spec?.taints as Array<{ key: string }> | undefined) ?? []).filter(
              (t) => t.key !== NOT_READY_TAINT,
            ),
          },
        }));
        return undefined; // its event brings the rest
      }
      const resources = nodeResources(devices);
      const beat = Date.now() - lastBeat >= HEARTBEAT_MS;
      if (!sameJson(node.status?.allocatable, resources) || beat) {
        const now = nowIso();
        await updateWithRetry(
          ctx.client,
          SandboxResources.node,
          node,
          { name: SANDBOX_NODE },
          (n) => ({
            ...n,
            status: {
              ...n.status,
              capacity: resources,
              allocatable: resources,
              conditions: [readyCondition(now)],
            },
          }),
          'status',
        );
        if (beat) {
          await updateWithRetry(
            ctx.client,
            SandboxResources.node,
            undefined,
            { name: SANDBOX_NODE },
            (n) => ({
              ...n,
              metadata: {
                ...n.metadata,
                annotations: { ...n.metadata.annotations, [NodeLabels.heartbeat]: now },
              },
            }),
          );
          lastBeat = Date.now();
        }
      }
      return { requeueAfterMs: Math.max(1_000, HEARTBEAT_MS - (Date.now() - lastBeat)) };
    },
    ctx.logger.child({ controller: 'node' }),
  ).watch(nodes, () => SANDBOX_NODE);
  offer.onChange(() => reconciler.enqueue(SANDBOX_NODE));
  reconciler.enqueue(SANDBOX_NODE);
  return reconciler;
}
