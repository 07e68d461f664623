// Harvester's control plane: a real kube-apiserver, kube-controller-manager and (with KubeVirt)
// kube-scheduler, Harvester's resource definitions, and KubeVirt's own virt-api and
// virt-controller (sandbox/kubevirt) with their CRDs in place of the sandbox's reduced ones, and
// Harvester v1.8.0's own `webhook` and `harvester` (sandbox/harvester) with Harvester's own CRDs,
// reached through the service proxy (control-plane/service-proxy.ts). The stand-ins for what
// cannot run here (sandbox/standins) are started on top by the caller.
import type { KubeClient } from '../src/kube/client.js';
import { startControlPlane, type ControlPlane } from './control-plane/control-plane.js';
import { startServiceProxy } from './control-plane/service-proxy.js';
import { issueCert } from './control-plane/pki.js';
import { installCrds } from './crds/install.js';
import type { WebhookServing } from './standins/index.js';
import { KubeVirt } from './kubevirt/kubevirt.js';
import { HarvesterComponents } from './harvester/components.js';

/** The sandbox's reduced kubevirt.io CRDs: left out, KubeVirt's own are installed. */
const OWN_KUBEVIRT_GROUP = 'kubevirt.io';
/** The sandbox's reduced harvesterhci.io CRDs: left out, Harvester's own are installed. */
const OWN_HARVESTER_GROUP = 'harvesterhci.io';

export interface HarvesterOptions {
  name?: string;
}

export interface HarvesterControlPlane {
  cp: ControlPlane;
  /** KubeVirt's own running virt-api and virt-controller (Harvester's webhook needs its kinds). */
  kubevirt: KubeVirt;
  /** Harvester's own running `webhook` and `harvester`. */
  components: HarvesterComponents;
  /** For the stand-ins' virt-handler (StandInOptions.virtHandlerClient). */
  virtHandlerClient: KubeClient;
  /** For the stand-ins' Longhorn mutator (StandInOptions.longhornWebhook): served on 127.0.0.1. */
  webhookServing: WebhookServing;
  /** Stops KubeVirt, then the control plane. */
  stop(): Promise<void>;
}

export async function startHarvester(opts: HarvesterOptions = {}): Promise<HarvesterControlPlane> {
  const kubevirt = await KubeVirt.prepare();
  const components = await HarvesterComponents.prepare();
  const without = [OWN_KUBEVIRT_GROUP, OWN_HARVESTER_GROUP];
  // kube-apiserver reaches Harvester's webhook Service through it, as through kube-proxy.
  const serviceProxy = await startServiceProxy();
  components.routeWebhook(serviceProxy);
  // CRDs go in before kube-controller-manager starts, so its garbage collector knows them.
  const cp = await startControlPlane({
    name: opts.name ?? 'harvester',
    scheduler: true,
    serviceProxy,
    beforeControllerManager: async (admin) => {
      await Promise.all([
        installCrds(admin, 'harvester', 30_000, { without }),
        kubevirt.installCrds(admin),
        components.installCrds(admin),
      ]);
    },
  }).catch(async (err: unknown) => {
    await serviceProxy.stop();
    throw err;
  });
  try {
    // Side by side: Harvester's webhook registers itself about 15 s after its CA exists
    // (docs/upstream/harvester-own.md), KubeVirt's components start meanwhile.
    const started = await Promise.allSettled([kubevirt.start(cp), components.start(cp)]);
    for (const s of started) if (s.status === 'rejected') throw s.reason;
    const virtHandlerClient = await kubevirt.virtHandlerClient(cp);
    // After KubeVirt's: openssl keeps the CA's serial number in one file.
    const webhookCert = await issueCert(
      cp.pki,
      'harvester-webhook',
      { commonName: 'harvester-webhook' },
      'server',
    );
    return {
      cp,
      kubevirt,
      components,
      virtHandlerClient,
      webhookServing: { certPem: webhookCert.certPem, keyPem: webhookCert.keyPem, caPem: cp.pki.caPem },
      stop: async () => {
        await components.stop(cp.admin);
        await kubevirt.stop(cp.admin);
        await cp.stop();
        await serviceProxy.stop();
      },
    };
  } catch (err) {
    await components.stop(cp.admin);
    await kubevirt.stop(cp.admin);
    await cp.stop();
    await serviceProxy.stop();
    throw err;
  }
}
