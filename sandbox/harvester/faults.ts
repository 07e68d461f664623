// Faults in Harvester's own controllers, injected at the apiserver: a ValidatingAdmissionPolicy
// (CEL, run in kube-apiserver; no webhook, no stand-in) that refuses some writes of Harvester's
// service account to one VM. Harvester's code runs unchanged and meets the refusal as it would
// meet any failed write: its handler returns the error and wrangler retries it with backoff.
//
// - holdRemoval: Harvester cannot take its cleanup finalizer off the VM, so a deleted VM stays
//   Terminating, held by that finalizer, until released.
// - forgetVm: Harvester can no longer write the VM at all (an older Harvester, whose VM
//   controller put no cleanup finalizer on it): once someone takes the finalizer off, nobody
//   deletes its volumes.
import { createHash } from 'node:crypto';
import { FINALIZER_HARVESTER_VM_CLEANUP } from '../../src/harvester/labels.js';
import type { KubeClient } from '../../src/kube/client.js';
import { isKubeError, isNotFound } from '../../src/kube/errors.js';
import { Resources, clusterResourceType, resourcePath, type KubeObject } from '../../src/kube/resources.js';
import { retryUntil } from '../../src/kube/wait.js';
import { HARVESTER_USER } from './components.js';

const POLICY = clusterResourceType(
  'admissionregistration.k8s.io',
  'v1',
  'validatingadmissionpolicies',
  'ValidatingAdmissionPolicy',
);
const BINDING = clusterResourceType(
  'admissionregistration.k8s.io',
  'v1',
  'validatingadmissionpolicybindings',
  'ValidatingAdmissionPolicyBinding',
);

/** What a fault refuses: which writes of Harvester's service account to the VM. */
export type FaultKind = 'hold-removal' | 'forget-vm';

/** Marks the VM so Harvester looks at it again at once (not after its backoff). */
const TOUCH_ANNOTATION = 'sandbox.harvester-machine.invalid/fault-released';

/** The policy's CEL: what Harvester may not do to the VM. Pure, for its test. */
export function faultValidation(kind: FaultKind): { expression: string; message: string } {
  if (kind === 'forget-vm')
    return {
      expression: 'false',
      message: "the sandbox makes Harvester's controllers ignore this VM (an injected fault)",
    };
  const has = (obj: string): string =>
    `(has(${obj}.metadata.finalizers) && ${obj}.metadata.finalizers.exists(f, f == '${FINALIZER_HARVESTER_VM_CLEANUP}'))`;
  return {
    expression: `!${has('oldObject')} || ${has('object')}`,
    message:
      "the sandbox holds this VM's removal: Harvester may not take its cleanup finalizer off (an injected fault)",
  };
}

/** The policy and its binding for one fault on one VM. Pure, for its test. */
export function faultPolicy(
  kind: FaultKind,
  namespace: string,
  vm: string,
): { policy: KubeObject; binding: KubeObject } {
  const name = `sandbox-fault-${kind}-${createHash('sha256').update(`${namespace}/${vm}`).digest('hex').slice(0, 12)}`;
  const quote = (s: string): string => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  const policy = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: {
        resourceRules: [
          {
            apiGroups: ['kubevirt.io'],
            apiVersions: ['*'],
            operations: ['UPDATE'],
            resources: ['virtualmachines'],
            resourceNames: [vm],
          },
        ],
      },
      matchConditions: [
        { name: 'namespace', expression: `request.namespace == ${quote(namespace)}` },
        { name: 'harvester', expression: `request.userInfo.username == ${quote(HARVESTER_USER)}` },
      ],
      validations: [faultValidation(kind)],
    },
  } as KubeObject;
  const binding = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name },
    spec: { policyName: name, validationActions: ['Deny'] },
  } as KubeObject;
  return { policy, binding };
}

interface Vm extends KubeObject {
  metadata: KubeObject['metadata'] & { finalizers?: string[] };
}

/**
 * Injects and lifts faults. `asHarvester` acts as Harvester's service account: it asks, by dry
 * run, whether the apiserver already applies a fault (its policies load asynchronously).
 */
export class HarvesterFaults {
  constructor(
    private readonly admin: KubeClient,
    private readonly asHarvester: KubeClient,
  ) {}

  holdRemoval(namespace: string, vm: string): Promise<void> {
    return this.inject('hold-removal', namespace, vm);
  }

  releaseRemoval(namespace: string, vm: string): Promise<void> {
    return this.lift('hold-removal', namespace, vm);
  }

  forgetVm(namespace: string, vm: string): Promise<void> {
    return this.inject('forget-vm', namespace, vm);
  }

  private async inject(kind: FaultKind, namespace: string, vm: string): Promise<void> {
    const { policy, binding } = faultPolicy(kind, namespace, vm);
    await this.admin.create(POLICY, policy);
    await this.admin.create(BINDING, binding).catch(async (err: unknown) => {
      await this.admin.delete(POLICY, { name: policy.metadata.name });
      throw err;
    });
    await retryUntil({
      description: `the apiserver to apply the ${kind} fault to VM ${namespace}/${vm}`,
      timeoutMs: 30_000,
      attempt: async () => ((await this.refused(kind, namespace, vm)) === true ? true : undefined),
    });
  }

  private async lift(kind: FaultKind, namespace: string, vm: string): Promise<void> {
    const { policy } = faultPolicy(kind, namespace, vm);
    const name = policy.metadata.name;
    await this.admin.delete(BINDING, { name });
    await this.admin.delete(POLICY, { name });
    await retryUntil({
      description: `the apiserver to lift the ${kind} fault from VM ${namespace}/${vm}`,
      timeoutMs: 30_000,
      attempt: async () => ((await this.refused(kind, namespace, vm)) === false ? true : undefined),
    });
    // Harvester retries its failed handler with backoff; a change brings the VM back at once.
    await this.admin
      .patch(
        Resources.virtualMachine,
        { namespace, name: vm },
        {
          metadata: { annotations: { [TOUCH_ANNOTATION]: new Date().toISOString() } },
        },
      )
      .catch((err: unknown) => {
        if (!isNotFound(err)) throw err;
      });
  }

  /**
   * Whether the write of Harvester's that the fault refuses is refused now (a dry run: nothing
   * changes); undefined while that cannot be told (the VM has no cleanup finalizer to take off
   * yet, or changed under the probe).
   */
  private async refused(kind: FaultKind, namespace: string, vm: string): Promise<boolean | undefined> {
    const current = await this.admin.find<Vm>(Resources.virtualMachine, { namespace, name: vm });
    if (!current) return false;
    const finalizers = current.metadata.finalizers ?? [];
    if (kind === 'hold-removal' && !finalizers.includes(FINALIZER_HARVESTER_VM_CLEANUP)) return undefined;
    const probe: Vm = {
      ...current,
      metadata: {
        ...current.metadata,
        finalizers:
          kind === 'hold-removal'
            ? finalizers.filter((f) => f !== FINALIZER_HARVESTER_VM_CLEANUP)
            : finalizers,
      },
    };
    try {
      await this.asHarvester.call({
        method: 'PUT',
        path: resourcePath(Resources.virtualMachine, { namespace, name: vm }),
        query: { dryRun: 'All' },
        body: probe,
        operation: `dry-run update of VM ${namespace}/${vm} as Harvester`,
      });
      return false;
    } catch (err) {
      if (isKubeError(err, 'Conflict')) return undefined;
      if (/injected fault/.test((err as Error).message)) return true;
      throw err;
    }
  }
}
