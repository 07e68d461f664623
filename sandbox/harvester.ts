// Harvester's control plane: a real kube-apiserver, kube-controller-manager and (with KubeVirt)
// kube-scheduler, Harvester's resource definitions, and KubeVirt's own virt-api and
// virt-controller (sandbox/kubevirt) with their CRDs in place of the sandbox's reduced ones, and,
// with `ownHarvester`, Harvester v1.8.0's own `webhook` and `harvester` (sandbox/harvester) with
// Harvester's own CRDs in place of the sandbox's reduced harvesterhci.io ones. The stand-ins
// (sandbox/standins) are started on top by the caller.
import type { KubeClient } from '../src/kube/client.js';
import { startControlPlane, type ControlPlane } from './control-plane/control-plane.js';
import { startServiceProxy } from './control-plane/service-proxy.js';
import { issueCert } from './control-plane/pki.js';
import { installCrds } from './crds/install.js';
import type { WebhookServing } from './standins/index.js';
import { KubeVirt } from './kubevirt/kubevirt.js';
import { HarvesterComponents } from './harvester/components.js';

/** The sandbox's reduced kubevirt.io CRDs: left out where KubeVirt's own are installed. */
const OWN_KUBEVIRT_GROUP = 'kubevirt.io';
/** The sandbox's reduced harvesterhci.io CRDs: left out where Harvester's own run. */
const OWN_HARVESTER_GROUP = 'harvesterhci.io';

export interface HarvesterOptions {
  name?: string;
  /** Runs KubeVirt's virt-api and virt-controller, and kube-scheduler (default true). */
  kubevirt?: boolean;
  /**
   * Runs Harvester v1.8.0's own `webhook` and `harvester` processes (sandbox/harvester), its CRDs
   * in place of the sandbox's reduced ones (default false). The stand-ins they replace are then
   * switched off by the caller (StandInOptions.ownHarvester).
   */
  ownHarvester?: boolean;
}

export interface HarvesterControlPlane {
  cp: ControlPlane;
  /** With HarvesterOptions.kubevirt: the running components. */
  kubevirt: KubeVirt | undefined;
  /** With HarvesterOptions.ownHarvester: Harvester's own running processes. */
  components: HarvesterComponents | undefined;
  /** For the stand-ins' virt-handler (StandInOptions.virtHandlerClient). */
  virtHandlerClient: KubeClient | undefined;
  /** For the stand-ins' Harvester PVC webhook (StandInOptions.harvesterWebhook): served on 127.0.0.1. */
  webhookServing: WebhookServing;
  /** Stops KubeVirt, then the control plane. */
  stop(): Promise<void>;
}

export async function startHarvester(opts: HarvesterOptions = {}): Promise<HarvesterControlPlane> {
  const kubevirt = opts.kubevirt === false ? undefined : await KubeVirt.prepare();
  const components = opts.ownHarvester ? await HarvesterComponents.prepare() : undefined;
  const without = [...(kubevirt ? [OWN_KUBEVIRT_GROUP] : []), ...(components ? [OWN_HARVESTER_GROUP] : [])];
  // kube-apiserver reaches Harvester's webhook Service through it, as through kube-proxy.
  const serviceProxy = components ? await startServiceProxy() : undefined;
  if (components && serviceProxy) components.routeWebhook(serviceProxy);
  // CRDs go in before kube-controller-manager starts, so its garbage collector knows them.
  const cp = await startControlPlane({
    name: opts.name ?? 'harvester',
    scheduler: kubevirt !== undefined,
    ...(serviceProxy ? { serviceProxy } : {}),
    beforeControllerManager: async (admin) => {
      await Promise.all([
        installCrds(admin, 'harvester', 30_000, { without }),
        kubevirt?.installCrds(admin),
        components?.installCrds(admin),
      ]);
    },
  }).catch(async (err: unknown) => {
    await serviceProxy?.stop();
    throw err;
  });
  try {
    // Side by side: Harvester's webhook registers itself about 15 s after its CA exists
    // (docs/upstream/harvester-own.md), KubeVirt's components start meanwhile.
    const started = await Promise.allSettled([kubevirt?.start(cp), components?.start(cp)]);
    for (const s of started) if (s.status === 'rejected') throw s.reason;
    const virtHandlerClient = await kubevirt?.virtHandlerClient(cp);
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
        await components?.stop(cp.admin);
        await kubevirt?.stop(cp.admin);
        await cp.stop();
        await serviceProxy?.stop();
      },
    };
  } catch (err) {
    await components?.stop(cp.admin);
    await kubevirt?.stop(cp.admin);
    await cp.stop();
    await serviceProxy?.stop();
    throw err;
  }
}
