import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GO_CONFIG_JSON } from '../../harvester/testing/fixtures.js';
import { rancherKubeconfig } from '../../kube/testing/kubeconfig.js';
import { newDriverConfig } from './index.js';
import {
  applyFreshCredential,
  flagsInArgv,
  parseSavedConfig,
  SavedConfigError,
  savedConfigFor,
  serializeSavedConfig,
} from './go-json.js';

const OUR_DEFAULTS =
  '"HarvesterMachine":{"CreateTimeoutSeconds":600,"IPTimeoutSeconds":600,"RemoveTimeoutSeconds":600,"IPNetwork":"","CloudInitInSecret":false}';

/** rancher-machine stores the host with json.MarshalIndent(host, "", "    "), Driver nested one level. */
function indentedLikeRancherMachine(compactJson: string): string {
  const indented = JSON.stringify(JSON.parse(compactJson), null, 4).replace(/\n/g, '\n    ');
  // JSON.parse loses the big integer; put the original literal back for this test.
  return indented.replace('9007199254740992', '9007199254740993');
}

describe('config.json driver object', () => {
  it('round-trips a newer Go driver’s config: known fields in Go order, unknown kept verbatim after ours', () => {
    const saved = parseSavedConfig(GO_CONFIG_JSON);
    const expected = GO_CONFIG_JSON.replace(',"FutureCounter"', `,${OUR_DEFAULTS},"FutureCounter"`);
    assert.equal(serializeSavedConfig(saved), expected);
    assert.equal(serializeSavedConfig(parseSavedConfig(serializeSavedConfig(saved))), expected, 'stable');
  });

  it('reads the values as Go typed them', () => {
    const { driver, unknownFields } = parseSavedConfig(new TextEncoder().encode(GO_CONFIG_JSON));
    assert.equal(driver.MachineName, 'mycluster-pool1-7f8d9c5b6-x2v9q');
    assert.equal(driver.SSHPort, 22);
    assert.equal(driver.CPU, 2);
    assert.equal(driver.UserData, '#cloud-config\nruncmd:\n- echo a && echo b\n', '\\u0026 decoded');
    assert.equal(driver.VGPUInfo, null);
    assert.equal(driver.EnableSecureBoot, true);
    assert.deepEqual(driver.DiskInfo?.disks[0], {
      imageName: 'default/image-abc12',
      storageClassName: '',
      size: 40,
      bootOrder: 1,
      bus: 'virtio',
      type: '',
      hotPlugAble: false,
    });
    assert.deepEqual(driver.HostDeviceInfo, {
      hostDevices: [{ name: 'pci1', deviceName: 'intel.com/82599' }],
    });
    assert.deepEqual([...unknownFields.keys()], ['FutureCounter']);
    assert.equal(unknownFields.get('FutureCounter'), '9007199254740993', 'integer beyond 2^53 kept exactly');
  });

  it('reads the indented Driver object that rancher-machine hands to SetConfigRaw', () => {
    const saved = parseSavedConfig(indentedLikeRancherMachine(GO_CONFIG_JSON));
    const expected = GO_CONFIG_JSON.replace(',"FutureCounter"', `,${OUR_DEFAULTS},"FutureCounter"`);
    assert.equal(serializeSavedConfig(saved), expected);
  });

  it('writes a fresh driver with Go zero values and null pointers', () => {
    const json = serializeSavedConfig(savedConfigFor(newDriverConfig('m1', '/store')));
    assert.equal(
      json,
      '{"IPAddress":"","IPv6Address":"","MachineName":"m1","SSHUser":"","SSHPort":0,"SSHKeyPath":"","StorePath":"/store",' +
        '"SwarmMaster":false,"SwarmHost":"","SwarmDiscovery":"","KubeConfigContent":"","VMNamespace":"","VMAffinity":"",' +
        '"ClusterType":"","ClusterID":"","ClusterName":"","ServerVersion":"","CPU":0,"CPUModel":"","MemorySize":"",' +
        '"ReservedMemorySize":"","DiskSize":"","DiskBus":"","ImageName":"","DiskInfo":null,"KeyPairName":"",' +
        '"SSHPrivateKeyPath":"","SSHPublicKey":"","SSHPassword":"","AddUserToDockerGroup":false,"NetworkType":"",' +
        '"NetworkName":"","NetworkModel":"","NetworkInfo":null,"CloudConfig":"","UserData":"","NetworkData":"",' +
        '"EnableEFI":false,"EnableSecureBoot":false,"VGPUInfo":null,"CPUPinning":false,"IsolateEmulatorThread":false,' +
        `"EnableTPM":false,${OUR_DEFAULTS}}`,
    );
  });

  it('writes the storage options only when set: after EnableTPM, and per disk after hotPlugAble', () => {
    const driver = {
      ...newDriverConfig('m1', '/store'),
      BlockMultiQueue: true,
      IOThreadsPolicy: 'supplementalPool',
      IOThreadCount: 4,
      DiskInfo: {
        disks: [
          {
            imageName: 'default/img',
            storageClassName: '',
            size: 40,
            bootOrder: 1,
            bus: 'virtio',
            type: 'disk',
            hotPlugAble: false,
            cache: 'none',
            io: 'native',
            dedicatedIOThread: true,
          },
          {
            imageName: '',
            storageClassName: 'sc',
            size: 5,
            bootOrder: 0,
            bus: '',
            type: '',
            hotPlugAble: false,
          },
        ],
      },
    };
    const json = serializeSavedConfig(savedConfigFor(driver));
    assert.ok(
      json.includes(
        '"DiskInfo":{"disks":[{"imageName":"default/img","storageClassName":"","size":40,"bootOrder":1,"bus":"virtio","type":"disk","hotPlugAble":false,"cache":"none","io":"native","dedicatedIOThread":true},' +
          '{"imageName":"","storageClassName":"sc","size":5,"bootOrder":0,"bus":"","type":"","hotPlugAble":false}]}',
      ),
      json,
    );
    assert.ok(
      json.includes(
        `"EnableTPM":false,"BlockMultiQueue":true,"IOThreadsPolicy":"supplementalPool","IOThreadCount":4,${OUR_DEFAULTS}`,
      ),
      json,
    );
    const back = parseSavedConfig(json).driver;
    assert.deepEqual(
      [back.BlockMultiQueue, back.IOThreadsPolicy, back.IOThreadCount, back.DiskInfo],
      [true, 'supplementalPool', 4, driver.DiskInfo],
    );
    // Keys as any case, as json.Unmarshal matches them.
    const folded = parseSavedConfig(json.replace('"IOThreadCount"', '"iothreadcount"')).driver;
    assert.equal(folded.IOThreadCount, 4);
  });

  it('escapes as Go does: < > & and U+2028 as \\u sequences', () => {
    const driver = { ...newDriverConfig(), UserData: 'a <b> & c\u2028' };
    const json = serializeSavedConfig(savedConfigFor(driver));
    assert.ok(json.includes('"UserData":"a \\u003cb\\u003e \\u0026 c\\u2028"'), json);
    assert.equal(parseSavedConfig(json).driver.UserData, 'a <b> & c\u2028');
  });

  it('keeps unknown keys inside DiskInfo while it is unchanged, and writes ours once it changes', () => {
    const saved = parseSavedConfig(GO_CONFIG_JSON);
    assert.ok(serializeSavedConfig(saved).includes('"cacheMode":"none"'));
    const disks = saved.driver.DiskInfo?.disks ?? [];
    const changed = {
      ...saved,
      driver: { ...saved.driver, DiskInfo: { disks: disks.map((d) => ({ ...d, size: 80 })) } },
    };
    const json = serializeSavedConfig(changed);
    assert.ok(!json.includes('cacheMode'));
    assert.ok(json.includes('"size":80'));
  });

  it('unmarshals into the existing driver: absent keys keep their values, null leaves non-pointers alone', () => {
    const current = parseSavedConfig(GO_CONFIG_JSON);
    const next = parseSavedConfig(
      '{"IPAddress":"10.0.0.9","SSHUser":null,"DiskInfo":null,"Extra":[1, 2]}',
      current,
    );
    assert.equal(next.driver.IPAddress, '10.0.0.9');
    assert.equal(next.driver.SSHUser, 'ubuntu', 'null into a string is a no-op in Go');
    assert.equal(next.driver.DiskInfo, null, 'null into a pointer sets nil');
    assert.equal(next.driver.ClusterName, 'mycluster');
    assert.equal(next.unknownFields.get('Extra'), '[1,2]');
    assert.equal(next.unknownFields.get('FutureCounter'), '9007199254740993');
    assert.equal(parseSavedConfig('null', current), current);
  });

  it('matches keys case-insensitively as json.Unmarshal does', () => {
    const { driver, unknownFields } = parseSavedConfig('{"clustername":"c1","SSHPORT":2222}');
    assert.equal(driver.ClusterName, 'c1');
    assert.equal(driver.SSHPort, 2222);
    assert.equal(unknownFields.size, 0);
  });

  it('reads and writes our own options under HarvesterMachine', () => {
    const json =
      '{"MachineName":"m","HarvesterMachine":{"IPNetwork":"default/vlan2","RemoveTimeoutSeconds":60}}';
    const saved = parseSavedConfig(json);
    assert.deepEqual(saved.driver.HarvesterMachine, {
      CreateTimeoutSeconds: 600,
      IPTimeoutSeconds: 600,
      RemoveTimeoutSeconds: 60,
      IPNetwork: 'default/vlan2',
      CloudInitInSecret: false,
      IPPoolInfo: null,
      VMLabels: {},
      VMAnnotations: {},
      FixedAddress: null,
    });
    assert.ok(
      serializeSavedConfig(saved).includes(
        '"HarvesterMachine":{"IPNetwork":"default/vlan2","RemoveTimeoutSeconds":60}',
      ),
    );
  });

  it('round-trips the address pool, the labels, the annotations and the address taken', () => {
    const options = {
      CreateTimeoutSeconds: 600,
      IPTimeoutSeconds: 600,
      RemoveTimeoutSeconds: 600,
      IPNetwork: '',
      CloudInitInSecret: false,
      IPPoolInfo: {
        network: 'default/vlan100',
        interface: '',
        range: '192.168.100.10-192.168.100.12',
        cidr: '',
        exclude: ['192.168.100.11'],
        prefix: 24,
        gateway: '192.168.100.1',
        dns: ['192.168.100.1'],
      },
      VMLabels: { app: 'web', 'example.com/tier': 'front' },
      VMAnnotations: { 'example.com/note': 'a, b=c' },
      FixedAddress: {
        address: '192.168.100.10',
        prefix: 24,
        interface: 'nic-0',
        mac: '02:11:22:33:44:55',
        network: 'default/vlan100',
        source: 'pool' as const,
        holder: 'hm-ip-0123456789-192-168-100-10',
      },
    };
    const first = serializeSavedConfig(
      savedConfigFor({ ...newDriverConfig('m'), HarvesterMachine: options }),
    );
    const read = parseSavedConfig(first);
    assert.deepEqual(read.driver.HarvesterMachine, options);
    assert.equal(serializeSavedConfig(read), first, 'written back byte for byte');
    // rancher-machine hands the indented object back; the same options come out of it.
    const indented = JSON.stringify(JSON.parse(first), null, 4);
    assert.deepEqual(parseSavedConfig(indented).driver.HarvesterMachine, options);
  });

  it('refuses saved options of the wrong shape, naming them', () => {
    for (const [json, key] of [
      ['{"HarvesterMachine":{"IPPoolInfo":{"network":7}}}', 'IPPoolInfo'],
      ['{"HarvesterMachine":{"VMLabels":{"a":1}}}', 'VMLabels'],
      ['{"HarvesterMachine":{"VMAnnotations":["a"]}}', 'VMAnnotations'],
      ['{"HarvesterMachine":{"FixedAddress":{"address":"1.2.3.4"}}}', 'FixedAddress'],
    ] as const) {
      assert.throws(
        () => parseSavedConfig(json),
        (err: unknown) => err instanceof SavedConfigError && err.message.includes(`HarvesterMachine.${key}`),
        json,
      );
    }
  });

  it('rejects wrong types, naming the field and not the value', () => {
    const cases: Array<[string, RegExp]> = [
      ['{"CPU":"two"}', /CPU must be a whole number \(got string\)/],
      ['{"CPU":1.5}', /CPU must be a whole number/],
      ['{"SSHPort":1e3}', /SSHPort must be a whole number/],
      ['{"EnableEFI":"yes"}', /EnableEFI must be true or false/],
      [
        '{"KubeConfigContent":{"token":"super-secret-value"}}',
        /KubeConfigContent must be a string \(got object\)/,
      ],
      ['{"DiskInfo":{"disks":[{"size":"40"}]}}', /DiskInfo disks\[0\]\.size must be a whole number/],
      ['{"NetworkInfo":[]}', /NetworkInfo must be an object or null/],
      ['[1,2]', /not a JSON object/],
      ['{"CPU":', /not valid JSON/],
    ];
    for (const [json, expected] of cases) {
      assert.throws(
        () => parseSavedConfig(json),
        (err: unknown) =>
          err instanceof SavedConfigError &&
          expected.test(err.message) &&
          !err.message.includes('super-secret'),
        json,
      );
    }
  });
});

describe('freshest credential wins', () => {
  const fresh = rancherKubeconfig({ token: 'kubeconfig-u-fresh1:freshfreshfreshfreshfreshfreshfresh' });
  const env = {
    HARVESTER_KUBECONFIG_CONTENT: rancherKubeconfig({
      token: 'kubeconfig-u-env1:envenvenvenvenvenvenvenvenvenv',
    }),
  };
  const saved = {
    ...newDriverConfig('m'),
    KubeConfigContent: rancherKubeconfig({ token: 'kubeconfig-u-old1:oldoldoldoldoldoldoldoldold' }),
  };
  const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');

  it('argv --flag=value (base64, padding intact) beats the environment and the saved config', () => {
    const padded = b64(`${fresh}\n`);
    assert.ok(padded.endsWith('='), 'the fixture must carry base64 padding');
    const result = applyFreshCredential(
      saved,
      ['harvester', 'rm', '-y', `--harvester-kubeconfig-content=${padded}`],
      env,
    );
    assert.equal(result.source, 'argv');
    assert.equal(result.config.KubeConfigContent, `${fresh}\n`);
    assert.equal(saved.KubeConfigContent.includes('old1'), true, 'input not mutated');
  });

  it('argv "--flag value" and single-dash forms count too; the last occurrence wins', () => {
    const r1 = applyFreshCredential(saved, ['x', '--harvester-kubeconfig-content', fresh], {});
    assert.equal(r1.source, 'argv');
    assert.equal(r1.config.KubeConfigContent, fresh);
    const r2 = applyFreshCredential(
      saved,
      ['-harvester-kubeconfig-content=first', '--harvester-kubeconfig-content', b64(fresh)],
      {},
    );
    assert.equal(r2.config.KubeConfigContent, fresh);
  });

  it('the environment beats the saved config, base64 or plain', () => {
    const plain = applyFreshCredential(saved, ['rm', '-y', '--update-config', 'm'], env);
    assert.equal(plain.source, 'env');
    assert.equal(plain.config.KubeConfigContent, env.HARVESTER_KUBECONFIG_CONTENT);
    const encoded = applyFreshCredential(saved, [], { HARVESTER_KUBECONFIG_CONTENT: b64(fresh) });
    assert.equal(encoded.config.KubeConfigContent, fresh);
  });

  it('keeps the saved one when neither is given, or when they are empty', () => {
    assert.deepEqual(applyFreshCredential(saved, ['rm', 'm'], {}), { config: saved, source: 'saved' });
    assert.equal(
      applyFreshCredential(saved, ['--harvester-kubeconfig-content='], { HARVESTER_KUBECONFIG_CONTENT: '' })
        .source,
      'saved',
    );
  });

  it('a flag without a value (next argument is another flag) falls through to the environment', () => {
    const r = applyFreshCredential(saved, ['--harvester-kubeconfig-content', '--debug'], env);
    assert.equal(r.source, 'env');
  });

  it('parses argv like rpcdriver.GetDriverOpts', () => {
    assert.deepEqual(
      [
        ...flagsInArgv([
          'docker-machine',
          'rm',
          '-y',
          '--update-config',
          'name',
          '--a=b=c',
          '---x',
          '--y',
          '-z',
        ]),
      ],
      [
        ['y', true],
        ['update-config', 'name'],
        ['a', 'b=c'],
        ['x', true],
        ['z', true],
      ],
    );
  });
});
