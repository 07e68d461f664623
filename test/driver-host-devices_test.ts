// --harvester-host-device-info on the sandbox: the pre-create check refuses a device no node
// can give (naming the nodes, the devices and why), passes once passthrough is enabled as
// Harvester's UI enables it, the VM gets its device and runs, the device is not touched by
// Remove, and a credential that may not list devices gets a warning instead of a check.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { KubeClient } from '../src/kube/client.js';
import { isForbidden, isKubeError, isNotFound } from '../src/kube/errors.js';
import { Resources, type KubeObject } from '../src/kube/resources.js';
import type { Vm } from '../src/harvester-access/harvester-api.js';
import { createTokenUser, tokenKubeconfig } from '../sandbox/control-plane/access.js';
import { DRIVER_CLUSTER_RULES, DRIVER_RULES } from '../sandbox/sandbox-seeds.js';
import {
  pciDeviceName,
  pciResourceName,
  SANDBOX_PCI,
  SANDBOX_USB,
  usbDeviceName,
} from '../sandbox/standins/harvester/device-discovery.js';
import type {
  PciDeviceClaimObject,
  PciDeviceObject,
  UsbDeviceObject,
} from '../sandbox/standins/harvester/device-types.js';
import {
  ANNOTATION_DEVICE_ALLOCATION,
  VFIO_PCI,
} from '../sandbox/standins/harvester/pcidevices-controller.js';
import { SANDBOX_NODE } from '../sandbox/standins/names.js';
import { HARVESTER_FEATURE_GATES } from '../sandbox/kubevirt/kubevirt-cr.js';
import { KubeVirtResources } from '../sandbox/kubevirt/resources.js';
import { KUBEVIRT_CR, KUBEVIRT_NAMESPACE } from '../sandbox/kubevirt/version.js';
import { eventually } from './support/eventually.js';
import { newMachine, tempStore } from './support/machines.js';
import { useSandbox } from './support/sandbox-fixture.js';
import { vmPvcNames, waitPvcGone } from './support/volumes.js';

interface NodeSelectorTerm {
  matchExpressions?: Array<{ key: string }>;
}
const fixture = useSandbox();
const store = tempStore();
const ns = 'default';
const [gpuA, gpuB, nic] = SANDBOX_PCI;
assert.ok(gpuA && gpuB && nic && SANDBOX_USB[0]);
const T4 = pciResourceName(gpuA);
const GPU_A = pciDeviceName(SANDBOX_NODE, gpuA.address);
const GPU_B = pciDeviceName(SANDBOX_NODE, gpuB.address);
const STICK = usbDeviceName(SANDBOX_USB[0]);
const info = (...deviceNames: string[]): string =>
  JSON.stringify({
    hostDevices: deviceNames.map((deviceName, i) => ({ name: `hostdevice-${i + 1}`, deviceName })),
  });

function machine(
  name: string,
  hostDeviceInfo: string,
  kubeconfig = fixture.sandbox.kubeconfigs.harvesterDirect,
  flags: Record<string, string> = {},
) {
  const m = newMachine({
    name,
    kubeconfig,
    storePath: store,
    clusterName: 'gpu',
    flags: { 'harvester-host-device-info': hostDeviceInfo, ...flags },
  });
  after(() => m.driver.close());
  return m;
}

async function refusal(check: Promise<void>): Promise<string> {
  const err = await check.then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(
    err instanceof Error && err.name === 'PreCreateCheckError',
    `expected a refusal, got ${String(err)}`,
  );
  return err.message;
}

/** What Harvester's UI creates on "Enable Passthrough" (name and owner: the device). */
async function enablePassthrough(admin: KubeClient, deviceName: string): Promise<void> {
  const device = await admin.get<PciDeviceObject>(Resources.pciDevice, { name: deviceName });
  await admin.create<PciDeviceClaimObject>(Resources.pciDeviceClaim, {
    apiVersion: 'devices.harvesterhci.io/v1beta1',
    kind: 'PCIDeviceClaim',
    metadata: {
      name: deviceName,
      ownerReferences: [
        {
          apiVersion: 'devices.harvesterhci.io/v1beta1',
          kind: 'PCIDevice',
          name: deviceName,
          uid: device.metadata.uid ?? '',
        },
      ],
    },
    spec: {
      address: device.status?.address ?? '',
      nodeName: device.status?.nodeName ?? '',
      userName: 'admin',
    },
  });
  await eventually(`passthrough enabled on ${deviceName}`, async () => {
    const claim = await admin.get<PciDeviceClaimObject>(Resources.pciDeviceClaim, { name: deviceName });
    return claim.status?.passthroughEnabled === true;
  });
}

describe('host devices (--harvester-host-device-info)', () => {
  it('refuses a device no node has enabled, naming the node, each device and why, and creates nothing', async () => {
    const { driver } = machine('gpu-pool1-aaaaa-refused', info(T4));
    const message = await refusal(driver.preCreateCheck());
    assert.match(
      message,
      new RegExp(
        `host device hostdevice-1 \\(${T4}\\): no node has it enabled for passthrough and free — ${SANDBOX_NODE}: ` +
          `${GPU_A} not enabled for passthrough \\(no PCIDeviceClaim\\), ${GPU_B} not enabled for passthrough \\(no PCIDeviceClaim\\); ` +
          'enable passthrough in the Harvester UI .* \\(--harvester-host-device-info\\)',
      ),
    );
    const unknown = machine('gpu-pool1-aaaaa-unknown', info('nvidia.com/A100_SXM4_80GB'));
    assert.match(
      await refusal(unknown.driver.preCreateCheck()),
      /hostdevice-1 \(nvidia\.com\/A100_SXM4_80GB\): no PCI or USB device on Harvester has this resource name; no device is enabled for passthrough/,
    );
    const vm = await fixture.sandbox.harvester.admin.find(Resources.virtualMachine, {
      namespace: ns,
      name: 'gpu-pool1-aaaaa-refused',
    });
    assert.equal(vm, undefined);
  });

  it('passes once passthrough is enabled; the VM asks for the device by resource, runs, and Harvester records it', async () => {
    const { sandbox } = fixture;
    const admin = sandbox.harvester.admin;
    await enablePassthrough(admin, GPU_A);
    // base64, as Rancher may send it
    const { driver } = machine('gpu-pool1-aaaaa-first', Buffer.from(info(T4)).toString('base64'));
    await driver.preCreateCheck();
    await driver.create();
    const vm = await admin.get<Vm>(Resources.virtualMachine, {
      namespace: ns,
      name: 'gpu-pool1-aaaaa-first',
    });
    assert.deepEqual(vm.spec.template.spec.domain.devices.hostDevices, [
      { name: 'hostdevice-1', deviceName: T4 },
    ]);
    // No node pinned for the device: the scheduler places by resource. The only required terms
    // are the ones Harvester's VM mutator adds for the VM's networks.
    const affinity = vm.spec.template.spec.affinity?.nodeAffinity as
      | { requiredDuringSchedulingIgnoredDuringExecution?: { nodeSelectorTerms?: NodeSelectorTerm[] } }
      | undefined;
    const required = affinity?.requiredDuringSchedulingIgnoredDuringExecution;
    const affinityKeys = (required?.nodeSelectorTerms ?? []).flatMap((t) =>
      (t.matchExpressions ?? []).map((e) => e.key),
    );
    assert.deepEqual(
      affinityKeys.filter((k) => !k.startsWith('network.harvesterhci.io/')),
      [],
      "no node affinity but the networks' (the scheduler places by resource)",
    );
    await eventually('Harvester to record the device given to the VM', async () => {
      const now = await admin.get<Vm>(Resources.virtualMachine, {
        namespace: ns,
        name: 'gpu-pool1-aaaaa-first',
      });
      return (
        now.metadata.annotations?.[ANNOTATION_DEVICE_ALLOCATION] ===
        JSON.stringify({ hostdevices: { [T4]: [GPU_A] } })
      );
    });
    const saved = JSON.parse(Buffer.from(driver.getConfigRaw()).toString('utf8')) as Record<string, unknown>;
    assert.deepEqual(saved.HostDeviceInfo, { hostDevices: [{ name: 'hostdevice-1', deviceName: T4 }] });
    const keys = Object.keys(saved);
    assert.equal(keys.indexOf('HostDeviceInfo'), keys.indexOf('VGPUInfo') + 1);
  });

  it('refuses a second machine while the only enabled device is in use, saying by which VM', async () => {
    const { driver } = machine('gpu-pool1-aaaaa-second', info(T4));
    const message = await refusal(driver.preCreateCheck());
    assert.match(
      message,
      new RegExp(`${GPU_A} in use by VM default/gpu-pool1-aaaaa-first, ${GPU_B} not enabled for passthrough`),
    );
  });

  it('Remove deletes the VM and its boot volume, never the device, its claim or its passthrough', async () => {
    const { sandbox } = fixture;
    const admin = sandbox.harvester.admin;
    const boot = await vmPvcNames(admin, ns, 'gpu-pool1-aaaaa-first');
    const { driver } = machine('gpu-pool1-aaaaa-first', info(T4));
    await driver.remove();
    assert.equal(
      await admin.find(Resources.virtualMachine, { namespace: ns, name: 'gpu-pool1-aaaaa-first' }),
      undefined,
    );
    for (const pvc of boot) await waitPvcGone(admin, ns, pvc);
    const claim = await admin.get<PciDeviceClaimObject>(Resources.pciDeviceClaim, { name: GPU_A });
    assert.equal(claim.status?.passthroughEnabled, true);
    assert.equal(claim.metadata.deletionTimestamp, undefined);
    const device = await admin.get<PciDeviceObject>(Resources.pciDevice, { name: GPU_A });
    assert.equal(device.status?.kernelDriverInUse, VFIO_PCI);
    // The device is free again for the next machine.
    await machine('gpu-pool1-aaaaa-second', info(T4)).driver.preCreateCheck();
  });

  it('takes a USB device through the same flag: refused until enabled, then accepted with a naming hint', async () => {
    const { sandbox } = fixture;
    const admin = sandbox.harvester.admin;
    const resource = `kubevirt.io/${STICK}`;
    const refused = machine('usb-pool1-aaaaa-stick', info(resource));
    assert.match(
      await refusal(refused.driver.preCreateCheck()),
      new RegExp(`${STICK} not enabled for passthrough;`),
    );
    const stick = await admin.get<UsbDeviceObject>(Resources.usbDevice, { name: STICK });
    await admin.create(Resources.usbDeviceClaim, {
      apiVersion: 'devices.harvesterhci.io/v1beta1',
      kind: 'USBDeviceClaim',
      metadata: {
        name: STICK,
        ownerReferences: [
          {
            apiVersion: 'devices.harvesterhci.io/v1beta1',
            kind: 'USBDevice',
            name: STICK,
            uid: stick.metadata.uid ?? '',
          },
        ],
      },
      spec: { userName: 'admin' },
    } as KubeObject);
    await eventually('the USB device enabled', async () => {
      return (
        (await admin.get<UsbDeviceObject>(Resources.usbDevice, { name: STICK })).status?.enabled === true
      );
    });
    const accepted = machine('usb-pool1-aaaaa-stick', info(resource));
    await accepted.driver.preCreateCheck();
    assert.match(
      accepted.log.text(),
      new RegExp(`naming the entry "${STICK}" lets Harvester refuse to disable its passthrough`),
    );
  });

  it('without the right to list devices, warns naming the rule to grant and leaves the check to Harvester', async () => {
    const { sandbox } = fixture;
    const deviceRule = (r: { apiGroups: string[] }): boolean =>
      r.apiGroups.includes('devices.harvesterhci.io');
    const user = await createTokenUser(sandbox.harvester.admin, {
      expiresAt: new Date(Date.now() + 3_600_000),
      rules: [...DRIVER_RULES, ...DRIVER_CLUSTER_RULES.filter((r) => !deviceRule(r))],
    });
    const kubeconfig = tokenKubeconfig({
      name: 'harvester',
      server: sandbox.proxy.url,
      caPem: sandbox.proxy.caPem,
      token: user.token,
    });
    const probe = KubeClient.fromKubeconfig(kubeconfig);
    try {
      await eventually('the new user may read settings', async () =>
        probe.find(Resources.setting, { name: 'server-version' }).then(
          () => true,
          () => false,
        ),
      );
      const denied = await probe.list(Resources.pciDevice).then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(isForbidden(denied), 'the user may not list pcidevices');
    } finally {
      probe.close();
    }
    const nicResource = pciResourceName(nic);
    const { driver, log } = machine('nic-pool1-aaaaa-blind', info(nicResource), kubeconfig);
    await driver.preCreateCheck(); // the NIC is not enabled: only Harvester can tell now
    const warning = log.lines.find(
      (l) => l.level === 'warn' && l.line.includes('--harvester-host-device-info not checked'),
    );
    assert.ok(warning, log.text());
    assert.match(
      warning.line,
      /may not list pcidevices\.devices\.harvesterhci\.io, pcideviceclaims\.devices\.harvesterhci\.io, usbdevices\.devices\.harvesterhci\.io \(grant it "list" on them cluster-wide, group devices\.harvesterhci\.io/,
    );

    // Harvester can tell: KubeVirt's virt-controller will not render a VM whose device is not
    // in the KubeVirt CR's permittedHostDevices, and the create waits report why.
    const { driver: creating } = machine('nic-pool1-aaaaa-unpermitted', info(nicResource), kubeconfig, {
      'harvester-create-timeout': '15',
    });
    const failed = await creating.create().then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(failed instanceof Error, 'the create must fail');
    assert.match(
      failed.message,
      new RegExp(
        `HostDevice ${nicResource.replace(/[.]/g, '\\.')} is not permitted in permittedHostDevices configuration`,
      ),
    );
    await creating.remove();
  });

  it("fails Create with KubeVirt's own message when its webhook refuses the VM, and leaves nothing behind", async () => {
    const { sandbox } = fixture;
    const admin = sandbox.harvester.admin;
    // A KubeVirt without the HostDevices feature gate (Harvester's chart sets it) refuses any
    // VM with host devices in virt-api's validating webhook; the device check passes (GPU A is enabled).
    const kubevirt = { namespace: KUBEVIRT_NAMESPACE, name: KUBEVIRT_CR };
    const setGates = (gates: string[]) =>
      admin.patch(KubeVirtResources.kubeVirt, kubevirt, {
        spec: { configuration: { developerConfiguration: { featureGates: gates } } },
      });
    await setGates(HARVESTER_FEATURE_GATES.filter((g) => g !== 'HostDevices'));
    try {
      const name = 'gpu-pool1-aaaaa-refused';
      const { driver } = machine(name, info(T4), sandbox.kubeconfigs.harvesterDirect, {
        'harvester-cloud-init-in-secret': 'true',
      });
      await driver.preCreateCheck();
      // virt-api reads the KubeVirt CR through an informer: wait until it refuses a probe (dry run).
      const probe = {
        apiVersion: 'kubevirt.io/v1',
        kind: 'VirtualMachine',
        metadata: { name: 'gate-probe', namespace: ns },
        spec: {
          runStrategy: 'Halted',
          template: {
            spec: {
              domain: {
                cpu: { cores: 1 },
                devices: { hostDevices: [{ name: 'h', deviceName: T4 }] },
                resources: { limits: { cpu: '1', memory: '1Gi' } },
              },
            },
          },
        },
      };
      await eventually('virt-api to read the changed feature gates', () =>
        admin
          .call({
            method: 'POST',
            path: `/apis/kubevirt.io/v1/namespaces/${ns}/virtualmachines`,
            query: { dryRun: 'All' },
            body: probe,
            operation: 'dry-run a VM with a host device',
          })
          .then(
            () => false,
            (e: unknown) => isKubeError(e) && /feature gate/.test(e.message),
          ),
      );
      const refused = await driver.create().then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(refused instanceof Error, 'the create must fail');
      assert.match(
        refused.message,
        /admission webhook "virtualmachine-validator\.kubevirt\.io" denied the request: Host Devices feature gate is not enabled in kubevirt-config/,
      );
      assert.equal(await admin.find(Resources.virtualMachine, { namespace: ns, name }), undefined);
      assert.equal(
        await admin.find(Resources.secret, { namespace: ns, name: `${name}-cloudinit` }),
        undefined,
      );
      const pvcs = await admin.list(Resources.pvc, { namespace: ns });
      assert.deepEqual(
        pvcs.items.filter((p) => p.metadata.name?.startsWith(`${name}-`)),
        [],
        'no volume of the refused VM',
      );
    } finally {
      await setGates([...HARVESTER_FEATURE_GATES]);
    }
  });

  it('on Harvester v1.7, refuses a device name libvirt would refuse as its alias, naming the field; v1.8 encodes it', async () => {
    const admin = fixture.sandbox.harvester.admin;
    const dotted = JSON.stringify({ hostDevices: [{ name: 'gpu.node-1', deviceName: T4 }] });
    await admin.patch(Resources.setting, { name: 'server-version' }, { value: 'v1.7.1' });
    try {
      const old = machine('gpu-pool1-aaaaa-dotted', dotted);
      assert.match(
        await refusal(old.driver.preCreateCheck()),
        /hostDevices\[0\]\.name "gpu\.node-1" holds "\.": Harvester v1\.7\.1 passes it to libvirt as the device alias ua-hostdevice-<name>.*\(--harvester-host-device-info\)/,
      );
    } finally {
      await admin.patch(Resources.setting, { name: 'server-version' }, { value: 'v1.8.0' });
    }
    const current = machine('gpu-pool1-aaaaa-dotted2', dotted);
    const outcome = await current.driver.preCreateCheck().then(
      () => 'passed',
      (e: unknown) => String(e),
    );
    assert.doesNotMatch(outcome, /hostDevices\[0\]\.name/);
  });

  it('refuses host devices on a Harvester without the pcidevices add-on', async () => {
    const admin = fixture.sandbox.harvester.admin;
    for (const plural of ['pcidevices', 'pcideviceclaims', 'usbdevices', 'usbdeviceclaims']) {
      await admin.delete(Resources.crd, { name: `${plural}.devices.harvesterhci.io` });
    }
    // Each kind goes on its own once its objects are deleted: the check asks for PCI and USB devices.
    const kinds = [
      Resources.pciDevice,
      Resources.pciDeviceClaim,
      Resources.usbDevice,
      Resources.usbDeviceClaim,
    ];
    await eventually('the device kinds to be gone', async () =>
      (
        await Promise.all(
          kinds.map((kind) =>
            admin.list(kind).then(
              () => false,
              (e: unknown) => isNotFound(e),
            ),
          ),
        )
      ).every(Boolean),
    );
    const { driver } = machine('gpu-pool1-aaaaa-noaddon', info(T4));
    assert.match(
      await refusal(driver.preCreateCheck()),
      /--harvester-host-device-info: Harvester has no pcidevices\.devices\.harvesterhci\.io: enable the pcidevices-controller add-on/,
    );
  });
});
