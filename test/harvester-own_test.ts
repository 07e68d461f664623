// Harvester v1.8.0's own `webhook` and `harvester` processes serving the sandbox's Harvester
// (the stand-ins they replaced are gone), and what they do with the
// objects the driver sends.
import assert from 'node:assert/strict';
import type { X509Certificate } from 'node:crypto';
import tls from 'node:tls';
import { after, describe, it } from 'node:test';
import { FINALIZER_HARVESTER_VM_CLEANUP } from '../src/harvester/labels.js';
import { isKubeError } from '../src/kube/errors.js';
import { Resources, type KubeObject } from '../src/kube/resources.js';
import { waitFor } from '../src/kube/wait.js';
import type { Vm } from '../src/harvester-access/harvester-api.js';
import type { VirtualMachineImage } from '../src/api/harvester.js';
import { SEED_IMAGE_BYTES, SEED_IMAGE_VIRTUAL_SIZE } from '../sandbox/image-server.js';
import {
  BackingImages,
  IMAGE_ID_ANNOTATION,
  LONGHORN_NAMESPACE,
  type BackingImage,
} from '../sandbox/standins/storage/backing-images.js';
import { WebhookConfigurations, type WebhookConfiguration } from '../sandbox/harvester/components.js';
import { HARVESTER_NAMESPACE } from '../sandbox/harvester/version.js';
import { STORAGE_PROFILE } from '../sandbox/standins/storage/cdi-storage-profiles.js';
import { useSandbox } from './support/sandbox-fixture.js';
import { newMachine, tempStore } from './support/machines.js';
import { vmPvcNames, waitPvcExists, waitPvcGone } from './support/volumes.js';

const fixture = useSandbox();
/** The finalizer of Harvester's image controller (its `vm-image-controller` remove handler). */
const FINALIZER_HARVESTER_IMAGE = 'wrangler.cattle.io/vm-image-controller';
const store = tempStore();
const ns = 'default';

interface Secret extends KubeObject {
  data?: Record<string, string>;
}

function connectTls(port: number, servername: string, ca: string): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port, servername, ca }, () => {
      const cert = socket.getPeerX509Certificate();
      socket.end();
      if (cert) resolve(cert);
      else reject(new Error('no peer certificate'));
    });
    socket.on('error', reject);
  });
}

describe("Harvester's own webhook and controllers (v1.8.0)", () => {
  // What both processes cost, while they still run.
  after(() => {
    const h = fixture.sandbox.harvesterComponents;
    if (h)
      console.log(`# harvester: start ${JSON.stringify(h.startTimes)} rss kB ${JSON.stringify(h.rssKb())}`);
  });

  it('registered its own webhook configurations, which kube-apiserver reaches at its webhook process', async () => {
    const { sandbox } = fixture;
    const admin = sandbox.harvester.admin;
    const components = sandbox.harvesterComponents;
    const validating = await admin.get<WebhookConfiguration>(WebhookConfigurations.validating, {
      name: 'harvester-validator',
    });
    const mutating = await admin.get<WebhookConfiguration>(WebhookConfigurations.mutating, {
      name: 'harvester-mutator',
    });
    const ca = await admin.get<Secret>(Resources.secret, {
      namespace: HARVESTER_NAMESPACE,
      name: 'harvester-webhook-ca',
    });
    const caPem = Buffer.from(ca.data?.['tls.crt'] ?? '', 'base64').toString('utf8');
    assert.match(caPem, /BEGIN CERTIFICATE/);
    for (const [config, name, policy] of [
      [validating, 'validator.harvesterhci.io', 'Fail'],
      [mutating, 'mutator.harvesterhci.io', 'Ignore'],
    ] as const) {
      assert.equal(config.webhooks?.length, 1);
      const [w] = config.webhooks ?? [];
      assert.equal(w?.name, name);
      assert.equal(w?.failurePolicy, policy);
      assert.equal(w?.sideEffects, 'None');
      assert.deepEqual(w?.clientConfig.service, {
        namespace: HARVESTER_NAMESPACE,
        name: 'harvester-webhook',
        path: name.startsWith('validator') ? '/v1/webhook/validation' : '/v1/webhook/mutation',
        port: 443,
      });
      // The CA Harvester's webhook made for itself, not the sandbox's.
      assert.equal(Buffer.from(w?.clientConfig.caBundle ?? '', 'base64').toString('utf8'), caPem);
    }
    const rulesFor = (c: WebhookConfiguration, resource: string): string[] =>
      (c.webhooks?.[0]?.rules ?? [])
        .filter((r) => r.resources.includes(resource))
        .flatMap((r) => r.operations);
    assert.ok(rulesFor(validating, 'persistentvolumeclaims').includes('DELETE'));
    assert.ok(rulesFor(validating, 'virtualmachines').includes('CREATE'));
    assert.ok(rulesFor(mutating, 'virtualmachines').includes('CREATE'));

    // The process on that port serves the certificate Harvester issued for its Service's name.
    const cert = await connectTls(components.webhookPort, 'harvester-webhook.harvester-system.svc', caPem);
    assert.match(cert.subjectAltName ?? '', /DNS:harvester-webhook\.harvester-system\.svc/);
    // kube-apiserver called it through the Service, as on a cluster (the sandbox's seeds passed it).
    assert.ok(components.webhookTunnels() > 0, 'kube-apiserver opened connections to harvester-webhook:443');
  });

  it("its storage class controller finds CDI's StorageProfile for every class (else it asks again every second)", async () => {
    const admin = fixture.sandbox.harvester.admin;
    const classes = await admin.list<KubeObject>(Resources.storageClass);
    assert.ok(classes.items.length >= 3, 'harvester-longhorn, longhorn and the image class');
    for (const c of classes.items)
      await waitFor(admin, {
        type: STORAGE_PROFILE,
        name: c.metadata.name,
        description: `StorageProfile ${c.metadata.name}`,
        until: (p) => p !== undefined,
        timeoutMs: 10_000,
      });
  });

  it("its image controller imports the seeded image from 127.0.0.1 through Longhorn's BackingImage (the stand-in's status), and removes both with the image", async () => {
    const { sandbox } = fixture;
    const admin = sandbox.harvester.admin;
    const imported = (i: VirtualMachineImage | undefined): boolean =>
      (i?.status?.conditions ?? []).some((c) => c.type === 'Imported' && c.status === 'True');
    // Harvester asked the URL itself (the image stand-in never does), on the sandbox's server.
    assert.ok((sandbox.imageServer.requests.HEAD ?? 0) >= 1, 'Harvester sent a HEAD to the image URL');
    const seed = await admin.get<VirtualMachineImage>(Resources.virtualMachineImage, {
      namespace: ns,
      name: sandbox.seeds.image,
    });
    assert.ok(imported(seed), 'the seeded image is Imported');
    const uid = seed.metadata.uid ?? '';
    assert.equal(seed.status?.storageClassName, `lh-${uid}`);
    // Its size and virtual size are the ones the BackingImage reports (the served qcow2 header).
    assert.equal(seed.status?.size, SEED_IMAGE_BYTES);
    assert.equal(seed.status?.virtualSize, SEED_IMAGE_VIRTUAL_SIZE);
    const bi = await admin.get<BackingImage>(BackingImages, {
      namespace: LONGHORN_NAMESPACE,
      name: `vmi-${uid}`,
    });
    assert.equal(bi.metadata.annotations?.[IMAGE_ID_ANNOTATION], `${ns}/${sandbox.seeds.image}`);
    assert.equal(bi.spec?.sourceParameters?.url, sandbox.imageServer.seedImageUrl);
    assert.equal(bi.spec?.minNumberOfCopies, 3);
    const sc = await admin.get<KubeObject & { provisioner?: string; parameters?: Record<string, string> }>(
      Resources.storageClass,
      { name: `lh-${uid}` },
    );
    assert.equal(sc.provisioner, 'driver.longhorn.io');
    assert.equal(sc.parameters?.backingImage, `vmi-${uid}`);

    // A second image: imported, then deleted: Harvester deletes its BackingImage and StorageClass.
    const name = 'own-image-2';
    await admin.create(Resources.virtualMachineImage, {
      apiVersion: 'harvesterhci.io/v1beta1',
      kind: 'VirtualMachineImage',
      metadata: { name, namespace: ns },
      spec: { displayName: 'second.img', sourceType: 'download', url: sandbox.imageServer.seedImageUrl },
    } as KubeObject);
    // Harvester removes an image's BackingImage and StorageClass only once its image controller
    // has claimed the image with its finalizer; the stand-in's Longhorn imports in a few hundred
    // ms, sometimes before that claim (an image deleted then leaves both behind: 4 of 25 tries).
    const second = await waitFor<VirtualMachineImage>(admin, {
      type: Resources.virtualMachineImage,
      namespace: ns,
      name,
      description: `image ${name} to be imported and claimed by Harvester's image controller`,
      until: (i) => imported(i) && (i?.metadata.finalizers ?? []).includes(FINALIZER_HARVESTER_IMAGE),
      describeState: (i) =>
        i
          ? `imported: ${imported(i) ? 'yes' : 'no'}, finalizers: ${JSON.stringify(i.metadata.finalizers ?? [])}`
          : 'absent',
      timeoutMs: 60_000,
    });
    const secondUid = second?.metadata.uid ?? '';
    assert.ok(await admin.find(Resources.storageClass, { name: `lh-${secondUid}` }));
    await admin.delete(Resources.virtualMachineImage, { namespace: ns, name });
    for (const [type, at] of [
      [Resources.virtualMachineImage, { namespace: ns, name }],
      [BackingImages, { namespace: LONGHORN_NAMESPACE, name: `vmi-${secondUid}` }],
      [Resources.storageClass, { name: `lh-${secondUid}` }],
    ] as const)
      await waitFor<KubeObject>(admin, {
        type,
        ...at,
        description: `${type.kind} ${at.name} to be gone`,
        until: (o) => o === undefined,
        // Harvester deletes the BackingImage in the foreground: the garbage collector takes its
        // finalizer off, once it knows the kind. Say which finalizers hold it if it stays.
        describeState: (o) =>
          o
            ? `present (deleting: ${o.metadata.deletionTimestamp ? 'yes' : 'no'}, finalizers: ${JSON.stringify(o.metadata.finalizers ?? [])})`
            : 'absent',
        timeoutMs: 60_000,
      });
  });

  it('an image whose URL is not on 127.0.0.1 is never fetched: its BackingImage fails and Harvester records the failure', async () => {
    const { sandbox } = fixture;
    const admin = sandbox.harvester.admin;
    const name = 'own-image-elsewhere';
    // Served by the sandbox's server, but named by another loopback spelling: Harvester's HEAD
    // passes, the stand-in's download is refused (it fetches 127.0.0.1 only).
    const url = sandbox.imageServer.seedImageUrl.replace('127.0.0.1', 'localhost');
    await admin.create(Resources.virtualMachineImage, {
      apiVersion: 'harvesterhci.io/v1beta1',
      kind: 'VirtualMachineImage',
      metadata: { name, namespace: ns },
      spec: { displayName: 'elsewhere.img', sourceType: 'download', url },
    } as KubeObject);
    const failed = await waitFor<VirtualMachineImage>(admin, {
      type: Resources.virtualMachineImage,
      namespace: ns,
      name,
      description: `image ${name} to fail its import`,
      // Harvester's own words for a failed import: "failed due to error: <the file's message>".
      until: (i) =>
        /failed due to error: .*not the sandbox's image server/.test(JSON.stringify(i?.status ?? {})),
      describeState: (i) => (i ? JSON.stringify(i.status ?? {}) : 'absent'),
      timeoutMs: 60_000,
    });
    assert.ok(
      !(failed?.status?.conditions ?? []).some((c) => c.type === 'Imported' && c.status === 'True'),
      'not imported',
    );
    await admin.delete(Resources.virtualMachineImage, { namespace: ns, name });
  });

  it('a VM the driver creates passes its mutators and validators, and its VM controller takes it over', async () => {
    const { sandbox } = fixture;
    const admin = sandbox.harvester.admin;
    const name = 'own-create-pool1-abc12-x1';
    const { driver } = newMachine({
      name,
      kubeconfig: sandbox.kubeconfigs.harvesterDirect,
      storePath: store,
      clusterName: 'own',
    });
    await driver.create();
    const vm = await waitFor<Vm>(admin, {
      type: Resources.virtualMachine,
      namespace: ns,
      name,
      description: `VM ${name} to carry Harvester's cleanup finalizer`,
      until: (v) => v?.metadata.finalizers?.includes(FINALIZER_HARVESTER_VM_CLEANUP) ?? false,
      timeoutMs: 30_000,
    });
    assert.ok(vm);
    const spec = vm.spec.template?.spec;
    // The mutator's MAC address on every interface (the stand-ins only backfilled it when the VMI went).
    for (const iface of spec?.domain.devices.interfaces ?? [])
      assert.match(iface.macAddress ?? '', /^([0-9a-f]{2}:){5}[0-9a-f]{2}$/, `interface ${iface.name}`);
    // Its overcommit (CPU /16, memory /1.5 of the limits), the guest memory, and the node
    // affinity of the VLAN network's cluster network.
    const domain = spec?.domain as unknown as {
      resources?: { requests?: Record<string, string> };
      memory?: { guest?: string };
    };
    assert.deepEqual(domain.resources?.requests, { cpu: '200m', memory: '2730Mi' });
    assert.equal(domain.memory?.guest, '4Gi');
    assert.match(JSON.stringify(spec?.affinity ?? {}), /network\.harvesterhci\.io\/mgmt/);

    // A second machine naming the first one's MAC on the same network: Harvester's validator
    // refuses the VM, and the driver's Create fails with its words, leaving nothing behind.
    const mac = spec?.domain.devices.interfaces?.[0]?.macAddress ?? '';
    const twin = 'own-twin-pool1-abc12-x1';
    const second = newMachine({
      name: twin,
      kubeconfig: sandbox.kubeconfigs.harvesterDirect,
      storePath: store,
      clusterName: 'own',
      flags: {
        'harvester-network-info': JSON.stringify({
          interfaces: [{ networkName: 'default/vlan1', macAddress: mac }],
        }),
      },
    });
    await assert.rejects(
      second.driver.create(),
      /duplicate mac address present for vm own-twin-pool1-abc12-x1/,
    );
    assert.equal(await admin.find(Resources.virtualMachine, { namespace: ns, name: twin }), undefined);
    const leftovers = [
      ...(await admin.list(Resources.secret, { namespace: ns })).items,
      ...(await admin.list(Resources.pvc, { namespace: ns })).items,
    ].filter((o) => o.metadata.name.startsWith(twin));
    assert.deepEqual(
      leftovers.map((o) => o.metadata.name),
      [],
    );
    second.driver.close();

    const disks = await vmPvcNames(admin, ns, name);
    await driver.remove();
    for (const pvc of disks) await waitPvcGone(admin, ns, pvc);
    driver.close();
  });

  it('its VM controller deletes the PVCs in removedPersistentVolumeClaims before its finalizer goes', async () => {
    const { sandbox } = fixture;
    const admin = sandbox.harvester.admin;
    const name = 'own-remove-pool1-abc12-x1';
    const { driver } = newMachine({
      name,
      kubeconfig: sandbox.kubeconfigs.harvesterDirect,
      storePath: store,
      clusterName: 'own',
    });
    await driver.create();
    const disks = await vmPvcNames(admin, ns, name);
    assert.equal(disks.length, 1);
    const [disk = ''] = disks;
    await waitPvcExists(admin, ns, disk);
    // Watch both: the order in which the PVC's deletion and the VM's finalizer removal arrive.
    const seen: string[] = [];
    const pvcDeleted = waitFor<KubeObject>(admin, {
      type: Resources.pvc,
      namespace: ns,
      name: disk,
      description: `PVC ${disk} to be deleted`,
      until: (p) => {
        const gone = p === undefined || p.metadata.deletionTimestamp !== undefined;
        if (gone && !seen.includes('pvc deleted')) seen.push('pvc deleted');
        return gone;
      },
      timeoutMs: 60_000,
    });
    const finalizerGone = waitFor<Vm>(admin, {
      type: Resources.virtualMachine,
      namespace: ns,
      name,
      description: `VM ${name} to lose Harvester's finalizer`,
      until: (v) => {
        const gone = !(v?.metadata.finalizers ?? []).includes(FINALIZER_HARVESTER_VM_CLEANUP);
        if (gone && !seen.includes('finalizer gone')) seen.push('finalizer gone');
        return gone;
      },
      timeoutMs: 60_000,
    });
    await driver.remove();
    await Promise.all([pvcDeleted, finalizerGone]);
    await waitPvcGone(admin, ns, disk);
    assert.deepEqual(seen, ['pvc deleted', 'finalizer gone']);
    driver.close();
  });

  it('its PVC webhook answers the dry-run delete: refused while a VM names the PVC, allowed otherwise', async () => {
    const { sandbox } = fixture;
    const admin = sandbox.harvester.admin;
    const name = 'own-dryrun-pool1-abc12-x1';
    const { driver } = newMachine({
      name,
      kubeconfig: sandbox.kubeconfigs.harvesterDirect,
      storePath: store,
      clusterName: 'own',
    });
    await driver.create();
    const [disk = ''] = await vmPvcNames(admin, ns, name);
    const dryRunDelete = async (pvcName: string): Promise<unknown> => {
      const pvc = await admin.get<KubeObject>(Resources.pvc, { namespace: ns, name: pvcName });
      return admin
        .delete(
          Resources.pvc,
          { namespace: ns, name: pvcName },
          { dryRun: true, preconditions: { uid: pvc.metadata.uid ?? '' } },
        )
        .then(
          () => undefined,
          (err: unknown) => err,
        );
    };
    const refusal = await dryRunDelete(disk);
    assert.ok(isKubeError(refusal), 'the dry-run delete is refused');
    assert.match(
      String((refusal as Error).message),
      new RegExp(`can not delete the volume ${disk} which is currently attached to VM: ${ns}/${name}`),
    );
    assert.ok(await admin.find(Resources.pvc, { namespace: ns, name: disk }), 'a dry run deletes nothing');

    // A volume no VM names: allowed (once the webhook's cache has it).
    const loose = 'own-dryrun-loose';
    await admin.create(Resources.pvc, {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: loose, namespace: ns },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    } as KubeObject);
    let answer: unknown = 'not asked';
    for (let i = 0; i < 50 && answer !== undefined; i++) {
      answer = await dryRunDelete(loose);
      if (answer !== undefined) await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(answer, undefined, `the dry-run delete of ${loose} is allowed: ${String(answer)}`);
    assert.ok(await admin.find(Resources.pvc, { namespace: ns, name: loose }));
    await admin.delete(Resources.pvc, { namespace: ns, name: loose });
    await driver.remove();
    driver.close();
  });
});
