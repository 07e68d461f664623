// The HarvesterConfig of docs/pools.md (docs/examples/harvester-config.yaml), applied to
// the sandbox's Rancher apiserver and read back, as Rancher's create job would pass it: the fields of the driver's schema kept, rendered as flags the
// way Rancher's machineprovision renders them (src/driver/rancher-machine-config.ts), the
// Harvester credential in the job's environment, run through the real rancher-machine with
// our plugin executable. The VM carries every field of ours: labels, annotations, the fixed
// address, the host device, the storage options.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { parse } from 'yaml';
import { LABEL_ADDRESS_CLAIM } from '../../src/harvester/fixed-addresses/address-claims.js';
import { createArgsForHarvesterConfig } from '../../src/driver/rancher-machine-config.js';
import type { Vm } from '../../src/harvester-access/harvester-api.js';
import { Resources, type KubeObject } from '../../src/kube/resources.js';
import { installPlugin, pluginExecutable } from '../../sandbox/rancher-machine/plugin-executable.js';
import { INSTALL_SCRIPT } from '../../sandbox/rancher-machine/rancher-job.js';
import {
  MachineCli,
  rancherMachineBinary,
  rancherMachineSkipReason,
} from '../../sandbox/rancher-machine/rancher-machine.js';
import {
  pciDeviceName,
  pciResourceName,
  SANDBOX_PCI,
} from '../../sandbox/standins/harvester/device-discovery.js';
import type { PciDeviceClaimObject, PciDeviceObject } from '../../sandbox/standins/harvester/device-types.js';
import { SANDBOX_NODE } from '../../sandbox/standins/names.js';
import { eventually } from '../support/eventually.js';
import { useSandbox } from '../support/sandbox-fixture.js';
import { installGuestSsh } from './support/guest-ssh.js';
import { readHostDocument } from './support/machine-store.js';
import { repoRoot, tempRoot } from './support/repo.js';

const NS = 'default';
const skip = rancherMachineSkipReason();
const EXAMPLE = 'docs/examples/harvester-config.yaml';
const [T4] = SANDBOX_PCI;
assert.ok(T4);

describe('the HarvesterConfig of docs/pools.md through rancher-machine', { timeout: 10 * 60_000 }, () => {
  if (skip) {
    it('runs rancher-machine', { skip }, () => undefined);
    return;
  }
  const fixture = useSandbox();
  const temp = tempRoot('hm-interop-pool-config');
  let binary = '';
  let plugin = '';
  before(async () => {
    [binary, plugin] = await Promise.all([rancherMachineBinary(), pluginExecutable()]);
    fs.writeFileSync(path.join(temp.dir, 'install.sh'), INSTALL_SCRIPT, { mode: 0o600 });
  });

  /** Passthrough on the sandbox's first T4, as Harvester's UI enables it (the example asks for one). */
  async function enablePassthrough(): Promise<void> {
    const admin = fixture.sandbox.harvester.admin;
    const name = pciDeviceName(SANDBOX_NODE, T4?.address ?? '');
    const device = await admin.get<PciDeviceObject>(Resources.pciDevice, { name });
    await admin.create<PciDeviceClaimObject>(Resources.pciDeviceClaim, {
      apiVersion: 'devices.harvesterhci.io/v1beta1',
      kind: 'PCIDeviceClaim',
      metadata: {
        name,
        ownerReferences: [
          {
            apiVersion: 'devices.harvesterhci.io/v1beta1',
            kind: 'PCIDevice',
            name,
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
    await eventually(`passthrough on ${name}`, async () => {
      const claim = await admin.get<PciDeviceClaimObject>(Resources.pciDeviceClaim, { name });
      return claim.status?.passthroughEnabled === true;
    });
  }

  it('creates the machine; its VM carries the labels, annotations, fixed address, host device and storage options', async () => {
    const { sandbox } = fixture;
    await enablePassthrough();
    const file = parse(fs.readFileSync(path.join(repoRoot(), EXAMPLE), 'utf8')) as KubeObject;
    assert.equal(file.apiVersion, 'rke-machine-config.cattle.io/v1');
    assert.equal(file.kind, 'HarvesterConfig');
    // `kubectl apply` of the file on Rancher's apiserver (the sandbox's HarvesterConfig
    // definition); what Rancher then reads is the stored object.
    const rancher = sandbox.rancher.admin;
    const namespace = file.metadata.namespace ?? '';
    if (!(await rancher.find(Resources.namespace, { name: namespace })))
      await rancher.create<KubeObject>(Resources.namespace, {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: namespace },
      });
    await rancher.create<KubeObject>(Resources.harvesterConfig, file);
    const config = (await rancher.get<KubeObject>(Resources.harvesterConfig, {
      namespace,
      name: file.metadata.name,
    })) as KubeObject & Record<string, unknown>;

    const instance = 'web-pool1-7c9d8b6f5-a1b2c';
    const dir = path.join(temp.dir, instance);
    const binDir = path.join(dir, 'bin');
    installPlugin(plugin, binDir);
    installGuestSsh(binDir, path.join(dir, 'ssh-calls.log'));
    const cli = new MachineCli({
      binary,
      binDir,
      home: path.join(dir, 'home'),
      tmpDir: path.join(dir, 'tmp'),
      // The cloud credential's keys, as Rancher puts them in the job's environment.
      env: { HARVESTER_KUBECONFIG_CONTENT: sandbox.kubeconfigs.harvesterViaRancher },
    });
    cli.freshHome();
    const driverArgs = createArgsForHarvesterConfig(config, 'web');
    for (const flag of [
      '--harvester-ip-pool-info=',
      '--harvester-vm-labels=',
      '--harvester-vm-annotations=',
      '--harvester-host-device-info=',
      '--harvester-io-threads-policy=',
      '--harvester-io-thread-count=2',
    ])
      assert.ok(
        driverArgs.some((a) => a.startsWith(flag)),
        `${flag} in ${driverArgs.join(' ')}`,
      );
    assert.ok(driverArgs.includes('--harvester-block-multi-queue'));
    await cli.expect(
      [
        'create',
        '--driver=harvester',
        `--custom-install-script=${path.join(temp.dir, 'install.sh')}`,
        ...driverArgs,
        instance,
      ],
      { timeoutMs: 180_000 },
    );

    const admin = sandbox.harvester.admin;
    const vm = await admin.get<Vm>(Resources.virtualMachine, { namespace: NS, name: instance });
    // vmLabels and vmAnnotations: on the VM and its pod's template.
    for (const labels of [vm.metadata.labels, vm.spec.template.metadata?.labels]) {
      assert.equal(labels?.['app'], 'web');
      assert.equal(labels?.['tier'], 'frontend');
    }
    for (const annotations of [vm.metadata.annotations, vm.spec.template.metadata?.annotations]) {
      assert.equal(annotations?.['example.com/team'], 'payments');
      assert.equal(annotations?.['example.com/cost-centers'], 'cc-1234, cc-5678');
    }
    // hostDeviceInfo
    const domain = vm.spec.template.spec.domain;
    assert.deepEqual(domain.devices.hostDevices, [{ name: 'hostdevice-1', deviceName: pciResourceName(T4) }]);
    // blockMultiQueue, ioThreadsPolicy, ioThreadCount, and the disks' cache, io, dedicatedIOThread
    assert.equal(domain.devices.blockMultiQueue, true);
    assert.equal(domain.ioThreadsPolicy, 'supplementalPool');
    assert.deepEqual(domain.ioThreads, { supplementalPoolThreadCount: 2 });
    assert.deepEqual(
      (domain.devices.disks ?? []).slice(1).map((d) => [d.name, d.cache, d.io, d.dedicatedIOThread]),
      [
        ['disk-0', 'none', 'native', true],
        ['disk-1', 'writeback', 'threads', undefined],
      ],
    );
    // ipPoolInfo: an address of the range, claimed on Harvester, reported by the guest.
    const address = String(readHostDocument(cli.storePath, instance).Driver.IPAddress);
    assert.match(address, /^192\.168\.100\.(2[0-9])$/);
    const claims = (
      await admin.list<KubeObject>(Resources.configMap, { namespace: NS, labelSelector: LABEL_ADDRESS_CLAIM })
    ).items;
    assert.equal(claims.length, 1);
    await eventually(`the instance to report ${address}`, async () => {
      const vmi = await admin.find<KubeObject & { status?: { interfaces?: Array<{ ipAddress?: string }> } }>(
        Resources.virtualMachineInstance,
        { namespace: NS, name: instance },
      );
      return vmi?.status?.interfaces?.[0]?.ipAddress === address;
    });

    await cli.expect(['rm', '-y', instance]);
    assert.equal(await admin.find(Resources.virtualMachine, { namespace: NS, name: instance }), undefined);
  });
});
