// The KubeVirt CR as Harvester v1.8.0 configures it (docs/upstream/kubevirt.md#the-kubevirt-cr):
// its chart's `kubevirt.spec` (feature gates, network, rollout and update strategies), and what
// Harvester's setting controller writes from its settings' defaults (the guest memory overhead
// ratio 1.5, the hot-plug ratio 4). `permittedHostDevices` is not set here: the pcidevices
// add-on adds to it as devices are enabled (its stand-in does the same).
//
// virt-operator is not run, so its part is played once: the status phase. virt-api and
// virt-controller use a KubeVirt CR only once it has a phase (virt-config GetConfigFromKubeVirtCR).
import type { KubeClient } from '../../src/kube/client.js';
import { isAlreadyExists } from '../../src/kube/errors.js';
import type { KubeVirt as KubeVirtCr } from '../../src/api/kubevirt.js';
import { KubeVirtResources } from './resources.js';
import { KUBEVIRT_CR, KUBEVIRT_NAMESPACE, KUBEVIRT_VERSION } from './version.js';

/** Harvester's chart: developerConfiguration.featureGates. */
export const HARVESTER_FEATURE_GATES = [
  'CPUManager',
  'DeclarativeHotplugVolumes',
  'ExpandDisks',
  'EnableVirtioFsConfigVolumes',
  'HostDevices',
] as const;

export function harvesterKubeVirt(namespace: string = KUBEVIRT_NAMESPACE): KubeVirtCr {
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'KubeVirt',
    metadata: {
      name: KUBEVIRT_CR,
      namespace,
      labels: { 'app.kubernetes.io/name': 'kubevirt', 'app.kubernetes.io/component': 'metadata' },
    },
    spec: {
      infra: { nodePlacement: {} },
      configuration: {
        vmStateStorageClass: 'vmstate-persistence',
        developerConfiguration: { featureGates: [...HARVESTER_FEATURE_GATES] },
        vmRolloutStrategy: 'LiveUpdate',
        network: {
          defaultNetworkInterface: 'bridge',
          permitSlirpInterface: true,
          permitBridgeInterfaceOnPodNetwork: true,
          binding: { managedtap: { domainAttachmentType: 'managedTap' } },
        },
        additionalGuestMemoryOverheadRatio: '1.5',
        liveUpdateConfiguration: { maxHotplugRatio: 4 },
      },
      workloadUpdateStrategy: { workloadUpdateMethods: ['LiveMigrate'] },
    },
  };
}

/**
 * Creates the CR (kept if it exists) and writes the status virt-operator writes once deployed.
 * `namespace`: KubeVirt's (where its components read it) by default; Harvester's own processes
 * read it in harvester-system (sandbox/harvester).
 */
export async function installKubeVirtCr(
  admin: KubeClient,
  namespace: string = KUBEVIRT_NAMESPACE,
): Promise<KubeVirtCr> {
  let cr: KubeVirtCr;
  try {
    cr = await admin.create<KubeVirtCr>(KubeVirtResources.kubeVirt, harvesterKubeVirt(namespace));
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
    cr = await admin.get<KubeVirtCr>(KubeVirtResources.kubeVirt, { namespace, name: KUBEVIRT_CR });
  }
  if (cr.status?.phase === 'Deployed') return cr;
  return admin.update<KubeVirtCr>(
    KubeVirtResources.kubeVirt,
    {
      ...cr,
      status: {
        phase: 'Deployed',
        observedKubeVirtVersion: KUBEVIRT_VERSION,
        targetKubeVirtVersion: KUBEVIRT_VERSION,
        observedDeploymentID: 'sandbox',
        // virt-operator records the architecture it runs on; virt-api defaults VMs' architecture from it.
        defaultArchitecture: 'amd64',
        conditions: [
          {
            type: 'Available',
            status: 'True',
            reason: 'AllComponentsReady',
            message: 'All components are ready.',
          },
          {
            type: 'Progressing',
            status: 'False',
            reason: 'AllComponentsReady',
            message: 'All components are ready.',
          },
          {
            type: 'Degraded',
            status: 'False',
            reason: 'AllComponentsReady',
            message: 'All components are ready.',
          },
        ],
      },
    },
    'status',
  );
}
