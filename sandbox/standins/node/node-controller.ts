// Keeps the sandbox's Node as its kubelet and virt-handler would: created once with their labels
// and capacity (node-object.ts), its allocatable in line with what the device plugins offer (the
// pcidevices add-on's, as devices are enabled or released), and virt-handler's heartbeat fresh:
// virt-controller's node controller takes a node whose heartbeat is older than 5 minutes for
// one without virt-handler and fails its VMIs (pkg/virt-controller/watch/node). It also does the
// one thing kube-controller-manager's node lifecycle controller (not run here) does for a Ready
// node: it lifts the `node.kubernetes.io/not-ready` taint the apiserver puts on every new Node
// (admission plugin TaintNodesByCondition), which kube-scheduler would not place pods past.
import { objectKey } from '../../../src/api/object-key.js';
import type { Node } from '../../../src/api/core.js';
import { ignoreAlreadyExists } from '../../../src/kube/errors.js';
import type { Cache, Controller } from '../../../src/kube/manager.js';
import type { KubeObject } from '../../../src/kube/resources.js';
import type { ReconcileResult } from '../../../src/kube/work-queue.js';
import { SandboxResources } from '../../capi/resources.js';
import type { StandInContext } from '../context.js';
import { SANDBOX_NODE } from '../names.js';
import { nowIso, sameJson } from '../runtime.js';
import { updateWithRetry } from '../writes.js';
import { NodeLabels, nodeResources, readyCondition, sandboxNode } from './node-object.js';

/** virt-handler's heartbeat period (pkg/virt-handler/heartbeat). */
const HEARTBEAT_MS = 60_000;
const NOT_READY_TAINT = 'node.kubernetes.io/not-ready';
const NODE_KEY = objectKey('', SANDBOX_NODE);

export interface DeviceOffer {
  /** Each resource a device plugin registered on the node, with the devices behind it. */
  offered(node: string): Map<string, string[]>;
  /** The caches whose changes may change what is offered. */
  sources: ReadonlyArray<Cache<KubeObject>>;
}

export function nodeController(ctx: StandInContext, offer: DeviceOffer): Controller {
  const nodes = ctx.manager.cache<Node>({ type: SandboxResources.node });
  let lastBeat = 0;

  /** The kubelet registers its Node, then posts its status (a subresource) in a second call. */
  async function register(devices: Map<string, string[]>): Promise<void> {
    const made = await ctx.client
      .create<Node>(SandboxResources.node, sandboxNode(devices, nowIso()))
      .catch(ignoreAlreadyExists);
    if (!made) return;
    await ctx.client.update<Node>(
      SandboxResources.node,
      { ...made, status: sandboxNode(devices, nowIso()).status },
      'status',
    );
    lastBeat = Date.now();
  }

  async function reconcile(): Promise<ReconcileResult> {
    const devices = offer.offered(SANDBOX_NODE);
    const node = nodes.get(NODE_KEY);
    if (!node) {
      await register(devices);
      return { requeueAfterMs: HEARTBEAT_MS };
    }
    if ((node.spec?.taints ?? []).some((t) => t.key === NOT_READY_TAINT)) {
      await updateWithRetry(ctx.client, SandboxResources.node, node, NODE_KEY, (n) => ({
        ...n,
        spec: { ...n.spec, taints: (n.spec?.taints ?? []).filter((t) => t.key !== NOT_READY_TAINT) },
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
        NODE_KEY,
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
        await updateWithRetry<Node>(ctx.client, SandboxResources.node, undefined, NODE_KEY, (n) => ({
          ...n,
          metadata: {
            ...n.metadata,
            annotations: { ...n.metadata.annotations, [NodeLabels.heartbeat]: now },
          },
        }));
        lastBeat = Date.now();
      }
    }
    return { requeueAfterMs: Math.max(1_000, HEARTBEAT_MS - (Date.now() - lastBeat)) };
  }

  const controller = ctx.manager.controller('node', { reconcile }).watch(nodes, () => NODE_KEY);
  for (const source of offer.sources) controller.watch(source, () => NODE_KEY);
  controller.enqueue(NODE_KEY);
  return controller;
}
