import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { newGoDriverConfig, type GoDriverConfig } from './config/go-config.js';
import { assembleUserData } from './cloud-init/cloud-init.js';
import { buildVirtualMachine, VmSpecError, type VmBuildContext } from './vm-spec.js';

const KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeFakeFakeFake machine';
const RKE2_INSTALL = 'runcmd:\n- sh /usr/local/custom_script/install.sh\n';

/** The machine of docs/upstream/harvester-kubevirt.md#example-vm: legacy flags, one disk, one NIC. */
function exampleConfig(overrides: Partial<GoDriverConfig> = {}): GoDriverConfig {
  return {
    ...newGoDriverConfig('mycluster-pool1-7f8d9c5b6-x2v9q', '/store'),
    VMNamespace: 'default',
    ClusterName: 'mycluster',
    CPU: 2,
    MemorySize: '4Gi',
    DiskSize: '40',
    ImageName: 'image-abc12',
    NetworkName: 'default/vlan1',
    SSHUser: 'ubuntu',
    SSHPort: 22,
    ...overrides,
  };
}

function context(overrides: Partial<VmBuildContext> = {}): VmBuildContext {
  const suffixes = ['b7k2m', 'c8l3n', 'd9m4p', 'f0n5q'];
  return {
    random: () => suffixes.shift() ?? 'zzzzz',
    imageStorageClass: (id) => ({ 'default/image-abc12': 'longhorn-image-abc12' })[id],
    sshPublicKey: KEY,
    cloudConfigContent: RKE2_INSTALL,
    ...overrides,
  };
}

// The example VM of docs/upstream/harvester-kubevirt.md#example-vm, as written there; its two
// elisions (the template's labels, the user data) are filled in, nothing else is changed.
const LABELS = `
    harvesterhci.io/creator: docker-machine-driver-harvester
    harvesterhci.io/vmName: mycluster-pool1-7f8d9c5b6-x2v9q
    harvesterhci.io/machineSetName: default-mycluster-pool1
    guestcluster.harvesterhci.io/name: mycluster
    nodepool.harvesterhci.io/name: pool1-7f8d9c5b6`;
const SPEC_EXAMPLE = `
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: mycluster-pool1-7f8d9c5b6-x2v9q
  namespace: default
  labels:${LABELS}
  annotations:
    harvesterhci.io/volumeClaimTemplates: '[{"metadata":{"name":"mycluster-pool1-7f8d9c5b6-x2v9q-disk-1-b7k2m","annotations":{"harvesterhci.io/imageId":"default/image-abc12"}},"spec":{"accessModes":["ReadWriteMany"],"resources":{"requests":{"storage":"40Gi"}},"storageClassName":"longhorn-image-abc12","volumeMode":"Block"}}]'
spec:
  runStrategy: RerunOnFailure
  template:
    metadata:
      labels:${LABELS.replaceAll('\n    ', '\n        ')}
      annotations: {harvesterhci.io/sshNames: '[]', harvesterhci.io/waitForLeaseInterfaceNames: '[]'}
    spec:
      evictionStrategy: LiveMigrateIfPossible
      domain:
        cpu: {cores: 2, sockets: 1, threads: 1}
        resources: {limits: {cpu: "2", memory: 4Gi}}
        devices:
          disks:
          - {name: cloudinitdisk, disk: {bus: virtio}}
          - {name: disk-1, bootOrder: 1, disk: {bus: virtio}}
          interfaces:
          - {name: nic-0, model: virtio, bridge: {}}
      networks:
      - {name: nic-0, multus: {networkName: default/vlan1}}
      volumes:
      - {name: cloudinitdisk, cloudInitNoCloud: {userData: "USER_DATA"}}
      - {name: disk-1, persistentVolumeClaim: {claimName: mycluster-pool1-7f8d9c5b6-x2v9q-disk-1-b7k2m}}
`;

describe('buildVirtualMachine', () => {
  it('reproduces the example VM of the spec exactly', () => {
    const { vm, cloudInitSecret } = buildVirtualMachine(exampleConfig(), context());
    const expectedUserData = `#cloud-config\nssh_authorized_keys:\n- ${KEY}\nruncmd:\n- sh /usr/local/custom_script/install.sh\n`;
    const expected = parse(SPEC_EXAMPLE) as {
      spec: { template: { spec: { volumes: Array<Record<string, unknown>> } } };
    };
    expected.spec.template.spec.volumes[0] = {
      name: 'cloudinitdisk',
      cloudInitNoCloud: { userData: expectedUserData },
    };
    // The documented example leaves the affinity out; it is the default one, checked next.
    const { affinity, ...templateSpec } = vm.spec.template.spec;
    assert.deepEqual(
      { ...vm, spec: { ...vm.spec, template: { ...vm.spec.template, spec: templateSpec } } },
      expected,
    );
    assert.equal(cloudInitSecret, undefined);
    assert.deepEqual(affinity, {
      podAntiAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [
          {
            weight: 100,
            podAffinityTerm: {
              labelSelector: { matchExpressions: [{ key: 'harvesterhci.io/creator', operator: 'Exists' }] },
              topologyKey: 'kubernetes.io/hostname',
            },
          },
        ],
      },
    });
    // The annotation is byte-for-byte the example's string (field order matters to nobody, but we keep Go's).
    assert.equal(
      vm.metadata.annotations?.['harvesterhci.io/volumeClaimTemplates'],
      (parse(SPEC_EXAMPLE) as { metadata: { annotations: Record<string, string> } }).metadata.annotations[
        'harvesterhci.io/volumeClaimTemplates'
      ],
    );
  });

  it('without a cluster name: no guest-cluster or pool labels', () => {
    const { vm } = buildVirtualMachine(exampleConfig({ ClusterName: '' }), context());
    assert.deepEqual(Object.keys(vm.metadata.labels ?? {}), [
      'harvesterhci.io/creator',
      'harvesterhci.io/vmName',
      'harvesterhci.io/machineSetName',
    ]);
    assert.deepEqual(vm.spec.template.metadata?.labels, vm.metadata.labels);
  });

  it('disk-info: disk-<i>, PVC per disk in order, cd-rom, hot-plug, storage class without image', () => {
    const cfg = exampleConfig({
      ImageName: '',
      DiskSize: '0',
      DiskInfo: {
        disks: [
          {
            imageName: 'default/image-abc12',
            storageClassName: '',
            size: 40,
            bootOrder: 1,
            bus: '',
            type: '',
            hotPlugAble: false,
          },
          {
            imageName: '',
            storageClassName: 'longhorn-ssd',
            size: 100,
            bootOrder: 0,
            bus: 'scsi',
            type: 'disk',
            hotPlugAble: true,
          },
          {
            imageName: 'image-abc12',
            storageClassName: '',
            size: 1,
            bootOrder: 2,
            bus: '',
            type: 'cd-rom',
            hotPlugAble: false,
          },
        ],
      },
    });
    const { vm } = buildVirtualMachine(cfg, context());
    const name = cfg.MachineName;
    assert.deepEqual(vm.spec.template.spec.domain.devices.disks, [
      { name: 'cloudinitdisk', disk: { bus: 'virtio' } },
      { name: 'disk-0', disk: { bus: 'virtio' }, bootOrder: 1 },
      { name: 'disk-1', disk: { bus: 'scsi' } },
      { name: 'disk-2', cdrom: { bus: 'sata' }, bootOrder: 2 },
    ]);
    assert.deepEqual(vm.spec.template.spec.volumes?.slice(1), [
      { name: 'disk-0', persistentVolumeClaim: { claimName: `${name}-disk-0-b7k2m` } },
      { name: 'disk-1', persistentVolumeClaim: { claimName: `${name}-disk-1-c8l3n`, hotpluggable: true } },
      { name: 'disk-2', persistentVolumeClaim: { claimName: `${name}-disk-2-d9m4p` } },
    ]);
    const templates = JSON.parse(
      vm.metadata.annotations?.['harvesterhci.io/volumeClaimTemplates'] ?? '[]',
    ) as unknown[];
    assert.deepEqual(templates[1], {
      metadata: { name: `${name}-disk-1-c8l3n` },
      spec: {
        accessModes: ['ReadWriteMany'],
        resources: { requests: { storage: '100Gi' } },
        storageClassName: 'longhorn-ssd',
        volumeMode: 'Block',
      },
    });
    assert.equal(
      (templates[2] as { metadata: { annotations: Record<string, string> } }).metadata.annotations[
        'harvesterhci.io/imageId'
      ],
      'default/image-abc12',
    );
  });

  it('network-info: nic-<i>, bridge by default, masquerade, MAC and model', () => {
    const cfg = exampleConfig({
      NetworkName: '',
      NetworkInfo: {
        interfaces: [
          { networkName: 'default/vlan1', macAddress: '', model: '', type: '' },
          { networkName: 'vlan2', macAddress: '52:54:00:12:34:56', model: 'e1000', type: 'masquerade' },
        ],
      },
    });
    const { vm } = buildVirtualMachine(cfg, context());
    assert.deepEqual(vm.spec.template.spec.domain.devices.interfaces, [
      { name: 'nic-0', model: 'virtio', bridge: {} },
      { name: 'nic-1', model: 'e1000', masquerade: {}, macAddress: '52:54:00:12:34:56' },
    ]);
    assert.deepEqual(vm.spec.template.spec.networks, [
      { name: 'nic-0', multus: { networkName: 'default/vlan1' } },
      { name: 'nic-1', multus: { networkName: 'vlan2' } },
    ]);
  });

  it('user affinity: kept, plus a weight-1 machine-set term appended where pod (anti-)affinity exists', () => {
    const user = {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] }],
        },
      },
      podAntiAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: [
          { topologyKey: 'zone', labelSelector: { matchLabels: { a: 'b' } } },
        ],
      },
    };
    const { vm } = buildVirtualMachine(exampleConfig({ VMAffinity: JSON.stringify(user) }), context());
    assert.deepEqual(vm.spec.template.spec.affinity, {
      ...user,
      podAntiAffinity: {
        ...user.podAntiAffinity,
        preferredDuringSchedulingIgnoredDuringExecution: [
          {
            weight: 1,
            podAffinityTerm: {
              labelSelector: { matchLabels: { 'harvesterhci.io/machineSetName': 'default-mycluster-pool1' } },
              topologyKey: 'kubernetes.io/hostname',
            },
          },
        ],
      },
    });
    const nodeOnly = buildVirtualMachine(exampleConfig({ VMAffinity: '{"nodeAffinity":{}}' }), context()).vm;
    assert.deepEqual(nodeOnly.spec.template.spec.affinity, { nodeAffinity: {} });
  });

  it('user affinity as Go reads it: keys in any case, unknown keys dropped, null is the default', () => {
    const user =
      '{"PodAntiAffinity":{"preferredduringschedulingignoredduringexecution":[{"Weight":5,"PodAffinityTerm":{"TopologyKey":"zone","typo":1}}]},"extra":true}';
    const { vm } = buildVirtualMachine(exampleConfig({ VMAffinity: user }), context());
    assert.deepEqual(vm.spec.template.spec.affinity, {
      podAntiAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [
          { weight: 5, podAffinityTerm: { topologyKey: 'zone' } },
          {
            weight: 1,
            podAffinityTerm: {
              labelSelector: { matchLabels: { 'harvesterhci.io/machineSetName': 'default-mycluster-pool1' } },
              topologyKey: 'kubernetes.io/hostname',
            },
          },
        ],
      },
    });
    const byDefault = buildVirtualMachine(exampleConfig({ VMAffinity: '' }), context()).vm;
    const byNull = buildVirtualMachine(exampleConfig({ VMAffinity: 'null' }), context()).vm;
    assert.deepEqual(byNull.spec.template.spec.affinity, byDefault.spec.template.spec.affinity);
  });

  it('names vGPU requests without a name after their device, uniquely and stably', () => {
    const requests = [
      { name: '', deviceName: 'nvidia.com/NVIDIA_A2-2Q' },
      { name: '', deviceName: 'nvidia.com/NVIDIA_A2-1Q' },
      { name: '', deviceName: 'nvidia.com/NVIDIA_A2-2Q' },
      { name: 'nvidia-com-NVIDIA_A2-1Q-2', deviceName: 'nvidia.com/NVIDIA_A2-1Q' },
    ];
    const build = () =>
      buildVirtualMachine(exampleConfig({ VGPUInfo: { vGPURequests: requests } }), context()).vm.spec.template
        .spec.domain.devices.hostDevices;
    assert.deepEqual(build(), [
      { name: 'nvidia-com-NVIDIA_A2-2Q', deviceName: 'nvidia.com/NVIDIA_A2-2Q' },
      { name: 'nvidia-com-NVIDIA_A2-1Q', deviceName: 'nvidia.com/NVIDIA_A2-1Q' },
      { name: 'nvidia-com-NVIDIA_A2-2Q-2', deviceName: 'nvidia.com/NVIDIA_A2-2Q' },
      { name: 'nvidia-com-NVIDIA_A2-1Q-2', deviceName: 'nvidia.com/NVIDIA_A2-1Q' },
    ]);
    assert.deepEqual(build(), build());
    // Every name passes Harvester's VMI mutator unchanged (it base32-encodes others).
    for (const d of build() ?? []) assert.match(d.name, /^[a-zA-Z0-9_-]+$/);
  });

  it('EFI, secure boot, TPM, vGPU, CPU pinning, emulator thread, CPU model, reserved memory, key pair', () => {
    const { vm } = buildVirtualMachine(
      exampleConfig({
        EnableEFI: true,
        EnableSecureBoot: true,
        EnableTPM: true,
        VGPUInfo: { vGPURequests: [{ name: 'gpu1', deviceName: 'nvidia.com/GRID_A100-1B' }] },
        CPUPinning: true,
        IsolateEmulatorThread: true,
        CPUModel: 'host-passthrough',
        ReservedMemorySize: '256Mi',
        KeyPairName: 'default/mykey',
      }),
      context(),
    );
    const domain = vm.spec.template.spec.domain;
    assert.deepEqual(domain.features, { smm: { enabled: true } });
    assert.deepEqual(domain.firmware, { bootloader: { efi: { secureBoot: true } } });
    assert.deepEqual(domain.devices.tpm, {});
    assert.deepEqual(domain.devices.hostDevices, [{ name: 'gpu1', deviceName: 'nvidia.com/GRID_A100-1B' }]);
    assert.deepEqual(domain.cpu, {
      cores: 2,
      sockets: 1,
      threads: 1,
      dedicatedCpuPlacement: true,
      isolateEmulatorThread: true,
      model: 'host-passthrough',
    });
    assert.equal(vm.metadata.annotations?.['harvesterhci.io/reservedMemory'], '256Mi');
    assert.equal(vm.spec.template.metadata?.annotations?.['harvesterhci.io/sshNames'], '["default/mykey"]');

    const efiOnly = buildVirtualMachine(exampleConfig({ EnableEFI: true }), context()).vm.spec.template.spec
      .domain;
    assert.deepEqual(efiOnly.features, { smm: { enabled: false } });
    assert.deepEqual(efiOnly.firmware, { bootloader: { efi: { secureBoot: false } } });
  });

  it('cloud-init too large for inline, or asked to be in a Secret', () => {
    const big = `#cloud-config\nwrite_files:\n- path: /etc/big\n  content: ${'x'.repeat(3000)}\n`;
    const { vm, cloudInitSecret } = buildVirtualMachine(exampleConfig({ UserData: big }), context());
    assert.deepEqual(vm.spec.template.spec.volumes?.[0], {
      name: 'cloudinitdisk',
      cloudInitNoCloud: { secretRef: { name: 'mycluster-pool1-7f8d9c5b6-x2v9q-cloudinit' } },
    });
    assert.equal(cloudInitSecret?.metadata.namespace, 'default');
    assert.equal(
      cloudInitSecret?.metadata.labels?.['harvesterhci.io/vmName'],
      'mycluster-pool1-7f8d9c5b6-x2v9q',
    );
    const asked = buildVirtualMachine(exampleConfig(), context({ cloudInitInSecret: true }));
    assert.ok(asked.cloudInitSecret);
    const expected = assembleUserData({
      sshUser: 'ubuntu',
      sshPassword: '',
      sshPublicKey: KEY,
      addUserToDockerGroup: false,
      userData: '',
      cloudConfigContent: RKE2_INSTALL,
    });
    assert.equal(Buffer.from(asked.cloudInitSecret.data?.['userdata'] ?? '', 'base64').toString(), expected);
  });

  it('with an SSH password, the user data is in the Secret, never inline in the VM (the Go driver inlines it)', () => {
    const password = 'pw-Zq8w7e6r5t4y3u2i';
    const { vm, cloudInitSecret } = buildVirtualMachine(exampleConfig({ SSHPassword: password }), context());
    assert.deepEqual(vm.spec.template.spec.volumes?.[0], {
      name: 'cloudinitdisk',
      cloudInitNoCloud: { secretRef: { name: 'mycluster-pool1-7f8d9c5b6-x2v9q-cloudinit' } },
    });
    assert.ok(!JSON.stringify(vm).includes(password), 'the VM holds the password');
    const userData = Buffer.from(cloudInitSecret?.data?.['userdata'] ?? '', 'base64').toString();
    assert.match(userData, new RegExp(`password: ${password}\n`));
  });

  it('fails clearly when the config cannot become a VM', () => {
    const cases: Array<[Partial<GoDriverConfig>, Partial<VmBuildContext>, RegExp]> = [
      [{}, { imageStorageClass: () => undefined }, /image default\/image-abc12 has no storage class yet/],
      [{ VMAffinity: '{"podAffinity":' }, {}, /VM affinity is not valid JSON/],
      [{ VMAffinity: '[]' }, {}, /VM affinity must be a JSON object/],
      [{ DiskSize: 'forty' }, {}, /disk size "forty" is not a whole number/],
      [{ CPU: 0 }, {}, /invalid number of CPU cores: 0/],
    ];
    for (const [cfg, ctx, expected] of cases) {
      assert.throws(
        () => buildVirtualMachine(exampleConfig(cfg), context(ctx)),
        (err: unknown) => err instanceof VmSpecError && expected.test(err.message),
      );
    }
  });
});

describe('VM spec: fixed address, labels and annotations of the pool', () => {
  it('pins the MACs given, over network-info’s, and takes the network data given', () => {
    const cfg = exampleConfig({
      NetworkName: '',
      NetworkInfo: {
        interfaces: [
          { networkName: 'default/mgmt', macAddress: '52:54:00:00:00:01', model: '', type: '' },
          { networkName: 'default/vlan100', macAddress: '', model: '', type: '' },
        ],
      },
      NetworkData: 'version: 1\nconfig: []\n',
    });
    const { vm } = buildVirtualMachine(
      cfg,
      context({ macAddresses: { 'nic-1': '02:00:00:00:00:02' }, networkData: 'version: 2\nethernets: {}\n' }),
    );
    const interfaces = vm.spec.template.spec.domain.devices.interfaces;
    assert.deepEqual(
      (interfaces ?? []).map((i) => [i.name, i.macAddress]),
      [
        ['nic-0', '52:54:00:00:00:01'],
        ['nic-1', '02:00:00:00:00:02'],
      ],
    );
    const cloudInit = (vm.spec.template.spec.volumes ?? []).find((v) => v.cloudInitNoCloud)?.cloudInitNoCloud;
    assert.equal(cloudInit?.networkData, 'version: 2\nethernets: {}\n');
  });

  it('puts the operator’s labels on the VM and its template, and the annotations on both, the driver’s winning', () => {
    const { vm } = buildVirtualMachine(
      exampleConfig(),
      context({
        userLabels: { app: 'web', 'example.com/tier': 'front' },
        userAnnotations: { 'example.com/note': 'a, b' },
        vmAnnotations: { 'harvester-machine.io/fixed-address': '{}' },
      }),
    );
    for (const labels of [vm.metadata.labels, vm.spec.template.metadata?.labels]) {
      assert.equal(labels?.['app'], 'web');
      assert.equal(labels?.['example.com/tier'], 'front');
      assert.equal(labels?.['harvesterhci.io/creator'], 'docker-machine-driver-harvester');
    }
    assert.equal(vm.metadata.annotations?.['example.com/note'], 'a, b');
    assert.equal(vm.metadata.annotations?.['harvester-machine.io/fixed-address'], '{}');
    assert.equal(vm.spec.template.metadata?.annotations?.['example.com/note'], 'a, b');
    assert.equal(vm.spec.template.metadata?.annotations?.['harvesterhci.io/sshNames'], '[]');
    const overriding = buildVirtualMachine(
      exampleConfig(),
      context({ userLabels: { 'harvesterhci.io/vmName': 'x' } }),
    ).vm;
    assert.equal(overriding.metadata.labels?.['harvesterhci.io/vmName'], 'mycluster-pool1-7f8d9c5b6-x2v9q');
  });
});
