// A hostile or broken config.json: what rancher-machine hands to SetConfigRaw for every
// command after create (rm, start, stop, ip...), and what the CLI keeps in its store. Every
// field in turn gets values of the wrong JSON type, nested garbage, huge strings and values
// of the right type that are still wrong; whole documents that are not JSON follow. Each is
// refused with an error that names the field (or its flag), stays short and never quotes a
// kubeconfig; nothing crashes; and no request reaches Harvester — a recording server stands
// in for it, so "nothing created" is checked as "nothing sent" (the table's one valid config
// shows that the recorder does see requests).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  ConfigError,
  configProblems,
  configWarnings,
  newDriverConfig,
} from '../../src/driver/config/index.js';
import { SavedConfigError, savedConfigFor, serializeSavedConfig } from '../../src/driver/config/go-json.js';
import { HarvesterDriver } from '../../src/driver/harvester-driver.js';
import { rancherKubeconfig } from '../../src/kube/testing/kubeconfig.js';
import { silentLogger } from '../../src/log/logger.js';
import { recordError } from '../../sandbox/secret-ledger.js';

const TOKEN = 'kubeconfig-u-hostile1:hostilehostilehostilehostilehostilehostile';
const MB = 1024 * 1024;
const huge = (c = 'x', n = MB): string => c.repeat(n);
/** JSON text put in place as it is (JSON.stringify cannot write 100 000 levels of nesting). */
class RawJson {
  constructor(readonly text: string) {}
}
const deep = (n: number): RawJson => new RawJson('['.repeat(n) + ']'.repeat(n));

/** Stands where Harvester would be: records every request; GETs find nothing, writes fail. */
const recorder = { server: http.createServer(), seen: [] as string[], url: '' };
before(async () => {
  recorder.server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    recorder.seen.push(`${req.method ?? ''} ${req.url ?? ''}`);
    req.resume();
    const notFound = req.method === 'GET';
    res.writeHead(notFound ? 404 : 500, { 'Content-Type': 'application/json' });
    res.end(
      JSON.stringify({
        kind: 'Status',
        code: notFound ? 404 : 500,
        reason: notFound ? 'NotFound' : 'InternalError',
      }),
    );
  });
  await new Promise<void>((resolve) => recorder.server.listen(0, '127.0.0.1', resolve));
  recorder.url = `http://127.0.0.1:${(recorder.server.address() as AddressInfo).port}`;
});
after(() => new Promise<void>((resolve) => recorder.server.close(() => resolve())));

const storePath = fs.mkdtempSync(path.join(os.tmpdir(), 'hm-hostile-'));
after(() => fs.rmSync(storePath, { recursive: true, force: true }));

/** A kubeconfig for the recorder (plain HTTP, which the client accepts only this way). */
function recorderKubeconfig(): string {
  return rancherKubeconfig({ server: recorder.url, token: TOKEN }).replace(
    `    server: "${recorder.url}"`,
    `    server: "${recorder.url}"\n    insecure-skip-tls-verify: true`,
  );
}

/** A complete, valid config.json driver object as the Go driver writes it. */
function validConfig(): Record<string, unknown> {
  return {
    ...(JSON.parse(serializeSavedConfig(savedConfigFor(newDriverConfig()))) as Record<string, unknown>),
    MachineName: 'hostile-pool1-a1b2c-x1',
    StorePath: storePath,
    SSHUser: 'root',
    SSHPort: 22,
    KubeConfigContent: recorderKubeconfig(),
    VMNamespace: 'default',
    ClusterName: 'hostile',
    CPU: 2,
    MemorySize: '4Gi',
    DiskSize: '40',
    DiskBus: 'virtio',
    ImageName: 'default/image-ubuntu',
    NetworkName: 'default/vlan1',
    NetworkModel: 'virtio',
  };
}

type Kind = 'string' | 'int' | 'bool' | 'object' | 'options';

/** Every field of the driver object, by JSON kind (checked against what the driver writes). */
const FIELD_KINDS: Record<string, Kind> = {
  IPAddress: 'string',
  IPv6Address: 'string',
  MachineName: 'string',
  SSHUser: 'string',
  SSHPort: 'int',
  SSHKeyPath: 'string',
  StorePath: 'string',
  SwarmMaster: 'bool',
  SwarmHost: 'string',
  SwarmDiscovery: 'string',
  KubeConfigContent: 'string',
  VMNamespace: 'string',
  VMAffinity: 'string',
  ClusterType: 'string',
  ClusterID: 'string',
  ClusterName: 'string',
  ServerVersion: 'string',
  CPU: 'int',
  CPUModel: 'string',
  MemorySize: 'string',
  ReservedMemorySize: 'string',
  DiskSize: 'string',
  DiskBus: 'string',
  ImageName: 'string',
  DiskInfo: 'object',
  KeyPairName: 'string',
  SSHPrivateKeyPath: 'string',
  SSHPublicKey: 'string',
  SSHPassword: 'string',
  AddUserToDockerGroup: 'bool',
  NetworkType: 'string',
  NetworkName: 'string',
  NetworkModel: 'string',
  NetworkInfo: 'object',
  CloudConfig: 'string',
  UserData: 'string',
  NetworkData: 'string',
  EnableEFI: 'bool',
  EnableSecureBoot: 'bool',
  VGPUInfo: 'object',
  CPUPinning: 'bool',
  IsolateEmulatorThread: 'bool',
  EnableTPM: 'bool',
  HarvesterMachine: 'options',
};

const NESTED_GARBAGE = { a: [1, { b: { c: [null, { d: 'e' }] } }], f: JSON.parse(deep(50).text) as unknown };
const WRONG_TYPES: Record<Kind, unknown[]> = {
  string: [42, true, NESTED_GARBAGE, ['a', 'b'], deep(100_000)],
  int: ['two', 1.5, true, {}, [], NESTED_GARBAGE, '9007199254740993'],
  bool: ['yes', 1, {}, [], NESTED_GARBAGE],
  object: [[], 'text', 42, true, deep(100_000), { disks: 'x', interfaces: 'y', vGPURequests: 'z' }],
  options: [
    'x',
    [],
    7,
    { CreateTimeoutSeconds: '60' },
    { IPNetwork: NESTED_GARBAGE },
    { RemoveTimeoutSeconds: 1.5 },
  ],
};

/** Values of the right type that are still wrong, and what the error must name. */
const WRONG_VALUES: Array<[field: string, value: unknown, names: RegExp]> = [
  ['MachineName', '', /MachineName/],
  ['MachineName', 'Upper-Case', /MachineName/],
  ['MachineName', '../../api/v1/namespaces/default/secrets/x', /MachineName/],
  ['MachineName', huge('a', 300), /MachineName/],
  ['MachineName', huge(), /MachineName/],
  ['VMNamespace', '', /--harvester-vm-namespace/],
  ['VMNamespace', 'kube system', /--harvester-vm-namespace/],
  ['VMNamespace', huge(), /--harvester-vm-namespace/],
  ['KubeConfigContent', ':::not yaml:::', /--harvester-kubeconfig-content/],
  ['KubeConfigContent', huge('q'), /--harvester-kubeconfig-content/],
  [
    'KubeConfigContent',
    rancherKubeconfig({ server: 'ftp://harvester.example/x', token: TOKEN }),
    /--harvester-kubeconfig-content/,
  ],
  ['CPU', 0, /--harvester-cpu-count/],
  ['CPU', -4, /--harvester-cpu-count/],
  ['MemorySize', 'lots', /--harvester-memory-size/],
  ['MemorySize', huge('9'), /--harvester-memory-size/],
  ['ReservedMemorySize', '-5Mi', /--harvester-reserved-memory-size/],
  ['DiskSize', '-1', /--harvester-disk-size/],
  ['DiskSize', 'forty', /--harvester-disk-size/],
  ['DiskBus', 'floppy', /--harvester-disk-bus/],
  ['DiskBus', huge(), /--harvester-disk-bus/],
  ['ImageName', '', /--harvester-image-name/],
  ['ImageName', 'a/b/c', /--harvester-image-name/],
  ['NetworkName', 'a//b', /--harvester-network-name/],
  ['NetworkModel', 'rtl8139x', /--harvester-network-model/],
  ['KeyPairName', 'sandbox-key', /--harvester-key-pair-name/],
  ['VMAffinity', '{"nodeAffinity": [', /--harvester-vm-affinity/],
  ['VMAffinity', '[1,2]', /--harvester-vm-affinity/],
  ['UserData', 'a: [b', /--harvester-user-data/],
  ['NetworkData', 'version: 1\nconfig: 7', /--harvester-network-data/],
  ['ClusterName', 'My Cluster!', /--harvester-cluster-name/],
  ['ClusterName', huge('c', 64 * 1024), /--harvester-cluster-name/],
  ['CPUModel', 'has spaces', /--harvester-cpu-model/],
  ['EnableSecureBoot', true, /--harvester-enable-secure-boot/],
  ['IsolateEmulatorThread', true, /--harvester-isolate-emulator-thread/],
  ['DiskInfo', { disks: [{ imageName: 'default/image-ubuntu', size: 0 }] }, /--harvester-disk-info/],
  ['DiskInfo', { disks: [] }, /--harvester-disk-info/],
  ['NetworkInfo', { interfaces: [{ networkName: '' }] }, /--harvester-network-info/],
  ['VGPUInfo', { vGPURequests: [{ name: '', deviceName: '' }] }, /--harvester-vgpu-info/],
  [
    'HostDeviceInfo',
    { hostDevices: [{ name: 'gpu', deviceName: 'not a resource' }] },
    /--harvester-host-device-info/,
  ],
  [
    'HostDeviceInfo',
    {
      hostDevices: [
        { name: 'a', deviceName: 'x.io/y' },
        { name: 'a', deviceName: 'x.io/z' },
      ],
    },
    /--harvester-host-device-info/,
  ],
  ['HarvesterMachine', { CreateTimeoutSeconds: 0 }, /--harvester-create-timeout/],
  ['HarvesterMachine', { IPNetwork: 'default/nowhere' }, /--harvester-ip-network/],
  ['SSHPrivateKeyPath', '/nonexistent/id_rsa', /--harvester-ssh-private-key-path/],
  ['CloudConfig', '/nonexistent/user-data', /--harvester-cloud-config/],
];

/** The JSON text of the valid config with one field replaced. */
function withField(field: string, value: unknown): string {
  const config = validConfig();
  const marker = '@@raw-json@@';
  if (value instanceof RawJson) config[field] = marker;
  else if (
    field === 'HarvesterMachine' &&
    value !== null &&
    typeof value === 'object' &&
    !Array.isArray(value)
  ) {
    config[field] = { ...(config[field] as object), ...value };
  } else config[field] = value;
  const text = JSON.stringify(config);
  return value instanceof RawJson ? text.replace(JSON.stringify(marker), value.text) : text;
}

function describeValue(value: unknown): string {
  const text = value instanceof RawJson ? value.text : (JSON.stringify(value) ?? String(value));
  return text.length > 40 ? `${text.slice(0, 30)}… (${text.length} chars)` : text;
}

/** Runs `op`; its error (recorded for the secrets scan), or undefined. */
async function errorOf(op: () => unknown): Promise<Error | undefined> {
  try {
    await op();
    return undefined;
  } catch (err) {
    recordError('hostile config', err);
    assert.ok(err instanceof Error, `threw a non-Error: ${String(err)}`);
    return err;
  }
}

function assertClear(err: Error | undefined, names: RegExp, what: string): void {
  assert.ok(err, `${what}: expected an error`);
  assert.ok(
    !(err instanceof RangeError) && !(err instanceof TypeError),
    `${what}: crashed: ${err.stack ?? ''}`,
  );
  assert.match(err.message, names, `${what}: the error must name the field`);
  assert.ok(err.message.length < 4_000, `${what}: a ${err.message.length}-character error`);
  assert.ok(!err.message.includes(TOKEN.split(':')[1] ?? '-'), `${what}: the error quotes the token`);
}

function loaded(json: string): HarvesterDriver {
  const driver = new HarvesterDriver({ logger: silentLogger, argv: [], env: {} });
  driver.setConfigRaw(Buffer.from(json, 'utf8'));
  return driver;
}

describe('config.json: the recorder sees requests', () => {
  it('a valid config reaches the server at the pre-create check (so silence below means something)', async () => {
    recorder.seen.length = 0;
    const driver = loaded(JSON.stringify(validConfig()));
    await errorOf(() => driver.preCreateCheck());
    driver.close();
    assert.ok(recorder.seen.length > 0);
  });

  it('covers every field the driver writes', () => {
    const written = Object.keys(
      JSON.parse(serializeSavedConfig(savedConfigFor(newDriverConfig()))) as object,
    );
    assert.deepEqual(Object.keys(FIELD_KINDS).sort(), written.sort());
  });
});

describe('config.json: a field of the wrong JSON type', () => {
  for (const [field, kind] of Object.entries(FIELD_KINDS)) {
    it(`${field} (${kind})`, async () => {
      recorder.seen.length = 0;
      for (const value of WRONG_TYPES[kind]) {
        const what = `${field} = ${describeValue(value)}`;
        const err = await errorOf(() => loaded(withField(field, value)));
        assertClear(err, new RegExp(`\\b${field}\\b`), what);
        assert.ok(err instanceof SavedConfigError, `${what}: ${String(err)}`);
      }
      assert.deepEqual(recorder.seen, []);
    });
  }
});

describe('config.json: a value of the right type that is still wrong', () => {
  for (const [field, value, names] of WRONG_VALUES) {
    it(`${field} = ${describeValue(value)}: refused before anything is sent`, async () => {
      recorder.seen.length = 0;
      const driver = loaded(withField(field, value));
      const identity = field === 'MachineName' || field === 'VMNamespace';
      const checks: Array<[string, () => Promise<unknown>]> = [
        ['create', () => driver.create()],
        ...(field === 'SSHPrivateKeyPath' || field === 'CloudConfig'
          ? [] // files read by Create only; the pre-create check leaves them to it
          : ([['preCreateCheck', () => driver.preCreateCheck()]] as Array<[string, () => Promise<unknown>]>)),
        ...(identity
          ? ([
              ['getState', () => driver.getState()],
              ['remove', () => driver.remove()],
              ['stop', () => driver.stop()],
              ['start', () => driver.start()],
            ] as Array<[string, () => Promise<unknown>]>)
          : []),
      ];
      for (const [op, run] of checks) {
        const err = await errorOf(run);
        assertClear(err, names, `${op} with ${field} = ${describeValue(value)}`);
        if (!['SSHPrivateKeyPath', 'CloudConfig'].includes(field))
          assert.ok(err instanceof ConfigError, String(err));
      }
      driver.close();
      assert.deepEqual(recorder.seen, [], 'nothing reached Harvester');
    });
  }
});

// The Go driver takes these and so do we (a drop-in must load every config.json it wrote):
// they create nothing different, so the checks let them through, and create warns about the
// two that will not do what was meant.
const GO_ACCEPTED: Array<[string, unknown, RegExp | undefined]> = [
  ['NetworkType', huge('t'), undefined], // saved, never read by either driver
  ['SSHUser', 'a b', /--harvester-ssh-user: "a b" is no Linux user name/],
  ['SSHPort', 70_000, /--harvester-ssh-port: 70000 is no TCP port/],
];

describe('config.json: values the Go driver accepts too', () => {
  for (const [field, value, warning] of GO_ACCEPTED) {
    it(`${field} = ${describeValue(value)}: no problem${warning ? ', a warning naming its flag' : ''}`, () => {
      const driver = loaded(withField(field, value));
      const cfg = driver.config;
      assert.deepEqual(configProblems(cfg), []);
      const warnings = configWarnings(cfg);
      if (warning)
        assert.ok(
          warnings.some((w) => warning.test(w)),
          warnings.join('\n'),
        );
      else assert.deepEqual(warnings, []);
      driver.close();
    });
  }
});

describe('config.json: not a driver object at all', () => {
  const documents: Array<[string, string]> = [
    ['empty', ''],
    ['truncated', '{"MachineName":"m","CPU":'],
    ['trailing comma', '{"CPU":2,}'],
    ['a leading zero', '{"CPU":02}'],
    ['NaN', '{"CPU":NaN}'],
    ['single quotes', "{'CPU':2}"],
    ['an array', '[{"CPU":2}]'],
    ['a string', '"config"'],
    ['a number', '42'],
    ['a key twice, the second wrong', '{"CPU":2,"CPU":"two"}'],
    ['4 MiB of garbage', huge('{[', 2 * MB)],
    ['nested 200 000 deep', '['.repeat(200_000) + ']'.repeat(200_000)],
  ];
  for (const [what, doc] of documents) {
    it(`${what}: a SavedConfigError, nothing sent`, async () => {
      recorder.seen.length = 0;
      const err = await errorOf(() => loaded(doc));
      assert.ok(err instanceof SavedConfigError, `${what}: ${String(err)}`);
      assert.match(err.message, /^cannot read the saved driver config: /);
      assert.ok(err.message.length < 500);
      assert.deepEqual(recorder.seen, []);
    });
  }
  it('a deeply nested unknown key is kept and written back, not a crash', () => {
    const driver = loaded(withField('FutureField', deep(100_000)));
    assert.ok(Buffer.from(driver.getConfigRaw()).toString('utf8').includes('"FutureField":[[[['));
  });
});
