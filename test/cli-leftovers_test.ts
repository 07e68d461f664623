// `leftovers` and the dry run's load balancers, through the built CLI against the sandbox:
// the load balancers (and volumes) of a guest cluster with no VM left are listed by
// cluster; nothing of a cluster that still has a VM, nothing too young, no Harvester VM load
// balancer; one made without a cluster name only where no guest-cluster VM is left beside
// it, and deleted only with --include-unknown. `rm --dry-run --whole-cluster` names the
// cluster's load balancers as going with the cluster, a plain dry run as kept. ls and inspect
// show a machine's fixed address and its source; leftovers lists (and deletes) the address
// claims no VM's address matches: whose VM is gone, or planted beside a live machine.
import { recordedVolume } from './support/volumes.js';
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import type { RemovalPreview } from '../src/cli/removal-preview.js';
import { claimObject } from '../src/harvester/fixed-addresses/address-claims.js';
import { claimName } from '../src/harvester/fixed-addresses/ip-pool.js';
import { LABEL_GUEST_CLUSTER_NAME } from '../src/harvester/labels.js';
import { LB_LABEL_CLUSTER } from '../src/harvester/load-balancers.js';
import { Resources, type KubeObject } from '../src/kube/resources.js';
import { waitFor } from '../src/kube/wait.js';
import { createMachineVm } from '../sandbox/rancher/guest-cluster.js';
import { ensureGuestLoadBalancer, ensureIpPool } from '../sandbox/standins/cloud-provider.js';
import { useSandbox } from './support/sandbox-fixture.js';
import { CliRunner, MACHINE_FLAGS, kubeconfigFile, tempDir } from './cli-harness.js';

const fixture = useSandbox();
const dir = tempDir('hm-cli-left-');
const cli = new CliRunner(path.join(dir, 'store'));
const ns = 'default';

interface Report {
  volumes: { groups: Array<{ cluster: string | null; volumes: Array<{ name: string }> }> };
  loadBalancers: {
    checked: boolean;
    groups: Array<{ cluster: string | null; loadBalancers: Array<{ name: string; address?: string }> }>;
    skipped: Record<'liveCluster' | 'tooNew' | 'deleting', Array<{ name: string; reason: string }>>;
    notConsidered: number;
  };
  deletion?: {
    volumes: { deleted: string[] };
    loadBalancers: { deleted: string[]; skipped: Array<{ loadBalancer: string; reason: string }> };
  };
}

const lbGroups = (r: Report): Record<string, string[]> =>
  Object.fromEntries(
    r.loadBalancers.groups.map((g) => [g.cluster ?? '(unknown)', g.loadBalancers.map((l) => l.name).sort()]),
  );

async function vmGone(name: string, namespace = ns): Promise<void> {
  await waitFor(fixture.sandbox.harvester.admin, {
    type: Resources.virtualMachine,
    namespace,
    name,
    timeoutMs: 60_000,
    description: `VM ${namespace}/${name} to go`,
    until: (o) => o === undefined,
  });
}

const world = {
  admin: '',
  deadLb: '',
  deadVolume: '',
  liveLb: '',
  unknownNearLive: '',
  unknownAlone: '',
  vmLb: '',
};

describe('leftovers', () => {
  it('lists the load balancers and volumes of guest clusters without VMs, and nothing of a live one', async () => {
    const { sandbox } = fixture;
    const { admin } = sandbox.harvester;
    world.admin = kubeconfigFile(dir, 'admin', sandbox.harvester.adminKubeconfig);
    await ensureIpPool(admin, { name: 'left-pool', subnet: '203.0.113.0/24' });
    const lone = 'lone-ns';
    await admin.create(Resources.namespace, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: lone },
    });
    await createMachineVm(admin, { instanceName: 'dead-m1', clusterName: 'dead', vmNamespace: ns });
    await createMachineVm(admin, { instanceName: 'live-m1', clusterName: 'live', vmNamespace: ns });
    await createMachineVm(admin, { instanceName: 'lone-m1', clusterName: 'lone', vmNamespace: lone });
    world.deadLb = (
      await ensureGuestLoadBalancer(admin, {
        cluster: 'dead',
        namespace: ns,
        service: { namespace: 'default', name: 'web' },
      })
    ).metadata.name;
    world.liveLb = (
      await ensureGuestLoadBalancer(admin, {
        cluster: 'live',
        namespace: ns,
        service: { namespace: 'default', name: 'web' },
      })
    ).metadata.name;
    world.deadVolume = await recordedVolume(sandbox.standIns.csi, sandbox.harvester.admin, {
      namespace: ns,
      cluster: 'dead',
      size: '1Gi',
    });
    // Made by cloud providers run without --cluster-name: labelled "kubernetes".
    world.unknownNearLive = (
      await ensureGuestLoadBalancer(admin, {
        cluster: 'live',
        namespace: ns,
        service: { namespace: 'kube-system', name: 'ingress' },
      })
    ).metadata.name;
    await admin.patch(
      Resources.loadBalancer,
      { namespace: ns, name: world.unknownNearLive },
      { metadata: { labels: { [LB_LABEL_CLUSTER]: 'kubernetes' } } },
    );
    world.unknownAlone = (
      await ensureGuestLoadBalancer(admin, {
        cluster: 'lone',
        namespace: lone,
        service: { namespace: 'default', name: 'web' },
      })
    ).metadata.name;
    await admin.patch(
      Resources.loadBalancer,
      { namespace: lone, name: world.unknownAlone },
      { metadata: { labels: { [LB_LABEL_CLUSTER]: 'kubernetes' } } },
    );
    // Harvester's own VM load balancer: none of our business.
    world.vmLb = 'vm-lb';
    await admin.create(Resources.loadBalancer, {
      apiVersion: 'loadbalancer.harvesterhci.io/v1beta1',
      kind: 'LoadBalancer',
      metadata: { name: world.vmLb, namespace: ns },
      spec: {
        workloadType: 'vm',
        ipam: 'dhcp',
        listeners: [{ name: 'http', port: 80, protocol: 'TCP', backendPort: 80 }],
      },
    } as KubeObject);
    // The dead cluster's and the lone cluster's VMs go without Rancher's annotation: Harvester keeps their load balancers.
    for (const [name, where] of [
      ['dead-m1', ns],
      ['lone-m1', lone],
    ] as const) {
      await admin.delete(Resources.virtualMachine, { namespace: where, name });
      await vmGone(name, where);
    }

    const young = (
      await cli.expect(0, ['leftovers', '--kubeconfig', world.admin, '-o', 'json'])
    ).json<Report>();
    assert.deepEqual(lbGroups(young), {}, 'everything is younger than the default --min-age of 10m');
    assert.equal(young.loadBalancers.skipped.tooNew.length, 2);

    const r = (
      await cli.expect(0, ['leftovers', '--kubeconfig', world.admin, '--min-age', '0', '-o', 'json'])
    ).json<Report>();
    assert.deepEqual(lbGroups(r), { dead: [world.deadLb], '(unknown)': [world.unknownAlone] });
    assert.match(
      r.loadBalancers.groups[0]?.loadBalancers[0]?.address ?? '',
      /^203\.0\.113\.\d+ from IP pool left-pool$/,
    );
    assert.deepEqual(
      r.loadBalancers.skipped.liveCluster.map((s) => s.name).sort(),
      [world.liveLb, world.unknownNearLive].sort(),
    );
    assert.equal(r.loadBalancers.notConsidered, 1);
    assert.ok(
      r.volumes.groups.some(
        (g) => g.cluster === 'dead' && g.volumes.some((v) => v.name === world.deadVolume),
      ),
      "the dead cluster's volume is listed beside its load balancer",
    );
    const text = (await cli.expect(0, ['leftovers', '--kubeconfig', world.admin, '--min-age', '0'])).stdout;
    assert.match(text, /Guest cluster "dead": load balancers/);
    assert.match(text, new RegExp(`${world.deadLb}\\s+default/web\\s+203\\.0\\.113\\.`));
    assert.match(text, /--delete leaves load balancers of no known cluster alone unless --include-unknown/);
  });

  it('--delete --yes deletes the listed load balancers of known clusters (and their volumes), the unknown only with --include-unknown', async () => {
    const { admin } = fixture.sandbox.harvester;
    const lbs = async (): Promise<string[]> =>
      (await admin.list<KubeObject>(Resources.loadBalancer, {})).items
        .filter((l) => !l.metadata.deletionTimestamp)
        .map((l) => l.metadata.name)
        .sort();
    const first = (
      await cli.expect(0, [
        'leftovers',
        '--kubeconfig',
        world.admin,
        '--min-age',
        '0',
        '--delete',
        '--yes',
        '-o',
        'json',
      ])
    ).json<Report>();
    assert.deepEqual(first.deletion?.loadBalancers.deleted, [`${ns}/${world.deadLb}`]);
    assert.ok(first.deletion?.volumes.deleted.includes(`${ns}/${world.deadVolume}`));
    await waitFor(admin, {
      type: Resources.loadBalancer,
      namespace: ns,
      name: world.deadLb,
      timeoutMs: 30_000,
      description: "the dead cluster's load balancer to go",
      until: (o) => o === undefined,
    });
    assert.deepEqual(
      await lbs(),
      [world.liveLb, world.unknownAlone, world.unknownNearLive, world.vmLb].sort(),
    );
    const second = (
      await cli.expect(0, [
        'leftovers',
        '--kubeconfig',
        world.admin,
        '--min-age',
        '0',
        '--delete',
        '--yes',
        '--include-unknown',
        '-o',
        'json',
      ])
    ).json<Report>();
    assert.deepEqual(second.deletion?.loadBalancers.deleted, [`lone-ns/${world.unknownAlone}`]);
    const live = await admin.list<KubeObject>(Resources.virtualMachine, {
      namespace: ns,
      labelSelector: `${LABEL_GUEST_CLUSTER_NAME}=live`,
    });
    assert.equal(live.items.length, 1, 'the live cluster keeps its VM');
    await waitFor(admin, {
      type: Resources.loadBalancer,
      namespace: 'lone-ns',
      name: world.unknownAlone,
      timeoutMs: 30_000,
      description: 'the unknown load balancer to go',
      until: (o) => o === undefined,
    });
    assert.deepEqual(await lbs(), [world.liveLb, world.unknownNearLive, world.vmLb].sort());
  });

  it('judges a guest cluster gone by its VMs in every namespace it can read, not only --namespace', async () => {
    const { admin } = fixture.sandbox.harvester;
    const other = 'spread-vms';
    await admin.create(Resources.namespace, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: other },
    });
    // Its first pool's VM ran the cloud provider in default; a second pool's VM is in spread-vms.
    await createMachineVm(admin, { instanceName: 'spread-m1', clusterName: 'spread', vmNamespace: ns });
    const lb =
      (
        await ensureGuestLoadBalancer(admin, {
          cluster: 'spread',
          namespace: ns,
          service: { namespace: 'default', name: 'web' },
        })
      ).metadata.name ?? '';
    await createMachineVm(admin, { instanceName: 'spread-m2', clusterName: 'spread', vmNamespace: other });
    await admin.delete(Resources.virtualMachine, { namespace: ns, name: 'spread-m1' });
    await vmGone('spread-m1');
    try {
      const r = (
        await cli.expect(0, [
          'leftovers',
          '--kubeconfig',
          world.admin,
          '--namespace',
          ns,
          '--min-age',
          '0',
          '-o',
          'json',
        ])
      ).json<Report>();
      assert.equal(
        lbGroups(r)['spread'],
        undefined,
        'not a leftover: the cluster still has a VM in spread-vms',
      );
      const skipped = r.loadBalancers.skipped.liveCluster.find((x) => x.name === lb);
      assert.match(skipped?.reason ?? '', /guest cluster "spread" still has VMs \(spread-vms\/spread-m2\)/);
      const deleting = (
        await cli.expect(0, [
          'leftovers',
          '--kubeconfig',
          world.admin,
          '--namespace',
          ns,
          '--min-age',
          '0',
          '--delete',
          '--yes',
          '-o',
          'json',
        ])
      ).json<Report>();
      assert.ok(!deleting.deletion?.loadBalancers.deleted.includes(`${ns}/${lb}`));
      assert.ok(
        await admin.find(Resources.loadBalancer, { namespace: ns, name: lb }),
        'its load balancer stays',
      );
    } finally {
      await admin.delete(Resources.loadBalancer, { namespace: ns, name: lb });
      await admin.delete(Resources.virtualMachine, { namespace: other, name: 'spread-m2' });
    }
  });
});

describe("rm --dry-run and the guest cluster's load balancers", () => {
  it('--whole-cluster names them as going with the cluster once its last VM is gone, a plain dry run as kept', async () => {
    const { sandbox } = fixture;
    const kubeconfig = kubeconfigFile(dir, 'via-rancher', sandbox.kubeconfigs.harvesterViaRancher);
    await cli.expect(0, [
      'create',
      'plan-m1',
      '--kubeconfig',
      kubeconfig,
      '--harvester-cluster-name=plan',
      ...MACHINE_FLAGS,
    ]);
    const lb = (
      await ensureGuestLoadBalancer(sandbox.harvester.admin, {
        cluster: 'plan',
        namespace: ns,
        service: { namespace: 'default', name: 'web' },
      })
    ).metadata.name;
    await sandbox.harvester.admin.patch(Resources.setting, { name: 'server-version' }, { value: 'v1.7.1' });
    const whole = (
      await cli.expect(0, ['plan', 'rm', 'plan-m1', '--whole-cluster', '-o', 'json'])
    ).json<RemovalPreview>();
    assert.deepEqual(
      whole.delete.loadBalancers?.map((l) => `${l.namespace}/${l.name}`),
      [`${ns}/${lb}`],
    );
    assert.match(
      whole.delete.loadBalancers?.[0]?.reason ?? '',
      /deleted with guest cluster plan once its last VM is gone, by harvester-machine-controller \(Harvester v1\.7\.1 leaves them/,
    );
    assert.match(whole.delete.loadBalancers?.[0]?.reason ?? '', /not by this removal/);
    await sandbox.harvester.admin.patch(Resources.setting, { name: 'server-version' }, { value: 'v1.8.0' });
    const text = (await cli.expect(0, ['rm', '--dry-run', '--whole-cluster', 'plan-m1'])).stdout;
    assert.match(
      text,
      /with the guest cluster, once its last VM is gone:\n {2}LoadBalancer default\/plan-default-web-[0-9a-f]{8}\n {6}why: .*by Harvester itself \(Harvester v1\.8\.0 deletes them itself/,
    );
    assert.match(text, /1 load balancer\(s\) go with the guest cluster\. Nothing was changed\.\n$/);
    const plain = (await cli.expect(0, ['rm', '--dry-run', 'plan-m1', '-o', 'json'])).json<RemovalPreview>();
    assert.equal(plain.delete.loadBalancers, undefined);
    assert.deepEqual(
      plain.keep.loadBalancers?.map((l) => l.name),
      [lb],
    );
    assert.match(
      plain.keep.loadBalancers?.[0]?.reason ?? '',
      /only this machine is removed: the guest cluster keeps its load balancers/,
    );
  });
});

describe('fixed addresses in the CLI: ls, inspect and leftovers', () => {
  it('shows each machine’s address and where it came from, and lists the claims no VM’s address matches, never a live one’s', async () => {
    const { sandbox } = fixture;
    const { admin } = sandbox.harvester;
    const kubeconfig = kubeconfigFile(dir, 'direct-fixed', sandbox.kubeconfigs.harvesterDirect);
    const name = 'cli-fixed-pool1-a1b2c-x1';
    const pool = JSON.stringify({
      network: `${ns}/vlan100`,
      range: '192.168.100.200-192.168.100.201',
      prefix: 24,
      gateway: '192.168.100.1',
      dns: ['192.168.100.1'],
    });
    const created = await cli.expect(0, [
      'create',
      name,
      '--kubeconfig',
      kubeconfig,
      ...MACHINE_FLAGS,
      `--harvester-network-name=${ns}/vlan100`,
      `--harvester-ip-pool-info=${Buffer.from(pool).toString('base64')}`,
      '--harvester-vm-labels=app=web',
    ]);
    assert.match(created.stdout, /IP 192\.168\.100\.200\n$/);
    const ls = (await cli.expect(0, ['ls', '-o', 'json'])).json<
      Array<{ name: string; ip: string; addressSource: string; fixedAddress: { holder: string } | null }>
    >();
    const entry = ls.find((e) => e.name === name);
    assert.equal(entry?.ip, '192.168.100.200');
    assert.equal(entry?.addressSource, 'pool');
    assert.match(entry?.fixedAddress?.holder ?? '', /^hm-ip-[0-9a-f]{10}-192-168-100-200$/);
    const inspected = (await cli.expect(0, ['inspect', name])).stdout;
    assert.match(inspected, /IP: +192\.168\.100\.200 \(from pool\)/);
    assert.match(
      inspected,
      /Fixed address: +192\.168\.100\.200\/24 on nic-0 of default\/vlan100 \(MAC [0-9a-f:]{17}\), claimed as ConfigMap hm-ip-/,
    );

    // A create that stopped before its VM: an unowned claim of a machine without a VM.
    await admin.create(Resources.configMap, {
      ...claimObject(ns, 'crashed-pool1-a1b2c-x1', {
        address: '192.168.100.201',
        network: `${ns}/vlan100`,
        mac: '02:00:00:00:01:01',
        interface: 'nic-0',
      }),
    });
    // Planted by anyone who may create ConfigMaps there: names the live machine, an address its
    // VM does not have. Never taken over (its machine's VM exists): listed, so it can be deleted.
    await admin.create(Resources.configMap, {
      ...claimObject(ns, name, {
        address: '192.168.100.202',
        network: `${ns}/vlan100`,
        mac: '02:00:00:00:01:02',
        interface: 'nic-0',
      }),
    });
    const report = (
      await cli.expect(0, ['leftovers', '--kubeconfig', world.admin, '--min-age', '0', '-o', 'json'])
    ).json<{
      addressClaims: { leftover: Array<{ address: string; machine: string; reason: string }> };
    }>();
    assert.deepEqual(
      report.addressClaims.leftover.map((c) => [c.address, c.machine, c.reason]),
      [
        [
          '192.168.100.201',
          'crashed-pool1-a1b2c-x1',
          'never adopted, and machine crashed-pool1-a1b2c-x1 has no VM',
        ],
        ['192.168.100.202', name, `no VM has this address: VM ${ns}/${name} has 192.168.100.200`],
      ],
      'the live machine’s claim is not listed',
    );
    const text = (await cli.expect(0, ['leftovers', '--kubeconfig', world.admin, '--min-age', '0'])).stdout;
    assert.match(text, /Address claims no VM's address matches \(2\)/);
    const deleted = (
      await cli.expect(0, [
        'leftovers',
        '--kubeconfig',
        world.admin,
        '--min-age',
        '0',
        '--delete',
        '--yes',
        '-o',
        'json',
      ])
    ).json<{ deletion: { addressClaims: { deleted: string[] } } }>();
    assert.deepEqual(deleted.deletion.addressClaims.deleted, [
      `${ns}/${claimName(`${ns}/vlan100`, '192.168.100.201')}`,
      `${ns}/${claimName(`${ns}/vlan100`, '192.168.100.202')}`,
    ]);
    assert.ok(
      await admin.get(Resources.configMap, {
        namespace: ns,
        name: claimName(`${ns}/vlan100`, '192.168.100.200'),
      }),
      'the live machine’s own claim stays',
    );
    await cli.expect(0, ['rm', '-y', name]);
    const after = (await cli.expect(0, ['leftovers', '--kubeconfig', world.admin, '--min-age', '0'])).stdout;
    assert.match(after, /No leftover address claims/);
  });

  it('lists the VMs of guest clusters Rancher no longer has (with --rancher-kubeconfig), deletes them only with --delete, never one of a cluster Rancher has', async () => {
    const { sandbox } = fixture;
    const { admin } = sandbox.harvester;
    const here = 'orphan-vms';
    await admin.create(Resources.namespace, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: here },
    });
    await createMachineVm(admin, {
      instanceName: 'forgotten-m1',
      clusterName: 'forgotten',
      vmNamespace: here,
    });
    await createMachineVm(admin, { instanceName: 'kept-m1', clusterName: 'in-rancher', vmNamespace: here });
    await sandbox.rancher.admin
      .create(Resources.namespace, {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: 'fleet-default' },
      })
      .catch(() => undefined);
    await sandbox.rancher.admin.create<KubeObject>(Resources.provisioningCluster, {
      apiVersion: 'provisioning.cattle.io/v1',
      kind: 'Cluster',
      metadata: { name: 'in-rancher', namespace: 'fleet-default' },
      spec: {},
    } as KubeObject);
    const rancher = kubeconfigFile(dir, 'rancher', sandbox.kubeconfigs.rancherLocal);
    const base = ['leftovers', '--kubeconfig', world.admin, '-n', here, '--min-age', '0'];
    type VmReport = {
      virtualMachines: { orphaned?: Array<{ name: string; cluster: string }>; notChecked?: string };
    };

    const blind = (await cli.expect(0, [...base, '-o', 'json'])).json<VmReport>();
    assert.match(blind.virtualMachines.notChecked ?? '', /pass --rancher-kubeconfig/);
    const listed = (
      await cli.expect(0, [...base, '--rancher-kubeconfig', rancher, '-o', 'json'])
    ).json<VmReport>();
    assert.deepEqual(
      listed.virtualMachines.orphaned?.map((o) => `${o.name} ${o.cluster}`),
      ['forgotten-m1 forgotten'],
    );
    const text = (await cli.expect(0, [...base, '--rancher-kubeconfig', rancher])).stdout;
    assert.match(
      text,
      /VMs of guest clusters Rancher no longer has \(1\):\n {2}orphan-vms\/forgotten-m1 of guest cluster forgotten: /,
    );
    assert.ok(
      await admin.find(Resources.virtualMachine, { namespace: here, name: 'forgotten-m1' }),
      'a dry run deletes nothing',
    );

    const deleted = (await cli.expect(0, [...base, '--rancher-kubeconfig', rancher, '--delete', '--yes']))
      .stdout;
    assert.match(deleted, /Orphaned VMs: deleted 1, skipped 0, failed 0\./);
    await vmGone('forgotten-m1', here);
    assert.ok(
      await admin.find(Resources.virtualMachine, { namespace: here, name: 'kept-m1' }),
      "in-rancher's VM stays",
    );
  });
});
