// The RPCServerDriver table bound to a fake MachineDriver, called directly and over
// the wire.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MachineState } from '../driver/machine-driver.js';
import { registerSecret, clearRegisteredSecrets } from '../log/redact.js';
import { silentLogger } from '../log/logger.js';
import {
  API_VERSION,
  DRIVER_SERVICE_NAMES,
  driverService,
  driverServices,
  flagValuesFrom,
  toGoFlag,
} from './driver-service.js';
import { GOB_NAMES, driverOptionsInterface, driverRegistry, mcnFlagSliceType } from './driver-types.js';
import { goBytes, goEmptyStruct, goInt, goString } from './gob/go-types.js';
import { RpcServer } from './rpc-server.js';
import type { RpcMethod } from './rpc-service.js';
import { FAKE_FLAGS, FakeDriver } from './testing/fake-driver.js';
import { RpcTestClient } from './testing/rpc-test-client.js';

const SPEC_METHODS = [
  'GetVersion',
  'Heartbeat',
  'Close',
  'Create',
  'Remove',
  'Start',
  'Stop',
  'Restart',
  'Kill',
  'PreCreateCheck',
  'GetCreateFlags',
  'SetConfigRaw',
  'GetConfigRaw',
  'SetConfigFromFlags',
  'DriverName',
  'GetMachineName',
  'GetSSHKeyPath',
  'GetSSHUsername',
  'GetIP',
  'GetIPv6',
  'GetSSHHostname',
  'GetURL',
  'GetSSHPort',
  'GetState',
];

function method(driver: FakeDriver, name: string, onClose?: () => void): RpcMethod {
  const found = driverService(driver, { onClose }).get(name);
  assert.ok(found, name);
  return found;
}

describe('the method table', () => {
  it('has exactly the methods of server_driver.go (no Upgrade), under both service names', () => {
    const services = driverServices(new FakeDriver());
    assert.deepEqual([...services.keys()], ['RPCServerDriver', 'RpcServerDriver']);
    assert.deepEqual([...DRIVER_SERVICE_NAMES], ['RPCServerDriver', 'RpcServerDriver']);
    const service = services.get('RPCServerDriver');
    assert.equal(service, services.get('RpcServerDriver'));
    assert.deepEqual([...(service?.keys() ?? [])].sort(), [...SPEC_METHODS].sort());
  });

  it('declares the Go argument and reply types of each method', () => {
    const service = driverService(new FakeDriver());
    const types = (name: string) => [service.get(name)?.argType, service.get(name)?.replyType];
    assert.deepEqual(types('GetVersion'), [goEmptyStruct, goInt]);
    assert.deepEqual(types('SetConfigRaw'), [goBytes, goEmptyStruct]);
    assert.deepEqual(types('GetConfigRaw'), [goEmptyStruct, goBytes]);
    assert.deepEqual(types('SetConfigFromFlags'), [driverOptionsInterface, goEmptyStruct]);
    assert.deepEqual(types('GetCreateFlags'), [goEmptyStruct, mcnFlagSliceType]);
    assert.deepEqual(types('GetState'), [goEmptyStruct, goInt]);
    assert.deepEqual(types('GetSSHPort'), [goEmptyStruct, goInt]);
    for (const name of ['DriverName', 'GetMachineName', 'GetIP', 'GetIPv6', 'GetURL', 'GetSSHHostname']) {
      assert.deepEqual(types(name), [goEmptyStruct, goString], name);
    }
    for (const name of ['Heartbeat', 'Close', 'Create', 'Remove', 'Start', 'Stop', 'Restart', 'Kill']) {
      assert.deepEqual(types(name), [goEmptyStruct, goEmptyStruct], name);
    }
  });

  it('answers GetVersion with API version 1 and GetState with the state number', async () => {
    const driver = new FakeDriver();
    assert.equal(API_VERSION, 1);
    assert.equal(await method(driver, 'GetVersion').call({}), 1);
    assert.equal(await method(driver, 'GetState').call({}), MachineState.Running);
  });

  it('passes the config JSON through SetConfigRaw and GetConfigRaw', async () => {
    const driver = new FakeDriver();
    await method(driver, 'SetConfigRaw').call(Buffer.from('{"MachineName":"m1"}'));
    assert.equal(await method(driver, 'GetMachineName').call({}), 'm1');
    const raw = (await method(driver, 'GetConfigRaw').call({})) as Uint8Array;
    assert.deepEqual(JSON.parse(Buffer.from(raw).toString()), { MachineName: 'm1', FlagValues: {} });
  });

  it('runs Close and then, only after its answer, onClose', () => {
    let closed = 0;
    const close = method(new FakeDriver(), 'Close', () => closed++);
    assert.deepEqual(close.call({}), {});
    assert.equal(closed, 0);
    close.afterReply?.();
    assert.equal(closed, 1);
  });
});

describe('GetCreateFlags', () => {
  it('turns each McnFlag into the *mcnflag type rancher-machine accepts', () => {
    assert.deepEqual(FAKE_FLAGS.map(toGoFlag), [
      {
        name: '*mcnflag.StringFlag',
        value: { Name: 'fake-kc', Usage: 'kubeconfig', EnvVar: 'FAKE_KC', Value: 'dflt' },
      },
      { name: '*mcnflag.IntFlag', value: { Name: 'fake-cpu', Usage: 'cpus', EnvVar: 'FAKE_CPU', Value: 2 } },
      { name: '*mcnflag.BoolFlag', value: { Name: 'fake-debug', Usage: 'debug', EnvVar: 'FAKE_DEBUG' } },
      {
        name: '*mcnflag.StringSliceFlag',
        value: { Name: 'fake-list', Usage: 'list', EnvVar: '', Value: ['a', 'b'] },
      },
    ]);
  });
});

describe('SetConfigFromFlags', () => {
  const rpcFlags = (entries: Array<[string, { name: string; value: unknown } | null]>) => ({
    name: GOB_NAMES.rpcFlags,
    value: { Values: new Map(entries) },
  });

  it('hands string, int, bool and []string values to the driver; leaves out nil and other types', async () => {
    const driver = new FakeDriver();
    await method(driver, 'SetConfigFromFlags').call(
      rpcFlags([
        ['kc', { name: 'string', value: 'KC' }],
        ['cpu', { name: 'int', value: 4 }],
        ['debug', { name: 'bool', value: true }],
        ['list', { name: '[]string', value: ['a'] }],
        ['nothing', null],
        ['odd', { name: 'float64', value: 1.5 }],
      ]),
    );
    assert.deepEqual(
      driver.flagValues,
      new Map<string, unknown>([
        ['kc', 'KC'],
        ['cpu', 4],
        ['debug', true],
        ['list', ['a']],
      ]),
    );
  });

  it('refuses a nil value or a concrete type other than *rpcdriver.RPCFlags', () => {
    assert.throws(() => flagValuesFrom(null, silentLogger), /no driver options were sent/);
    assert.throws(
      () => flagValuesFrom({ name: 'string', value: 'x' }, silentLogger),
      /gob: string is not assignable to type drivers\.DriverOptions/,
    );
  });
});

describe('driver errors and crashes', () => {
  it('passes an Error through as the method error', async () => {
    const driver = new FakeDriver({ errors: { getIPv6: 'IPv6 address is not set' } });
    await assert.rejects(
      Promise.resolve(method(driver, 'GetIPv6').call({})),
      /^Error: IPv6 address is not set$/,
    );
  });

  it('reports a crash in Create (or anywhere) as rancher/machine reports a panic', async () => {
    const driver = new FakeDriver({ crashes: { create: 'TypeError', getState: 'string' } });
    await assert.rejects(Promise.resolve(method(driver, 'Create').call({})), (e: Error) => {
      assert.match(e.message, /^Panic in the driver: TypeError: Cannot read properties of undefined/);
      assert.match(e.message, /\n {4}at /, 'with the stack');
      return true;
    });
    await assert.rejects(
      Promise.resolve(method(driver, 'GetState').call({})),
      /^Error: Panic in the driver: non-error value thrown: "getState went wrong"\n$/,
    );
  });
});

describe('over the wire', () => {
  const driver = new FakeDriver({ errors: { remove: 'VM not found: secret-token-0123456789abcdef' } });
  let server: RpcServer;
  let client: RpcTestClient;

  before(async () => {
    registerSecret('secret-token-0123456789abcdef');
    server = new RpcServer({ services: driverServices(driver), registry: driverRegistry() });
    client = await RpcTestClient.dial(await server.listen());
  });
  after(async () => {
    clearRegisteredSecrets();
    client.close();
    await server.close();
  });

  it('answers the V0 service name too', async () => {
    assert.deepEqual(await client.call('RpcServerDriver.GetVersion', goInt), { reply: 1 });
  });

  it('has no Upgrade, like a Go plugin', async () => {
    assert.deepEqual(await client.call('RPCServerDriver.Upgrade', goEmptyStruct), {
      error: "rpc: can't find method RPCServerDriver.Upgrade",
    });
  });

  it('redacts secrets in errors before they go on the wire', async () => {
    assert.deepEqual(await client.call('RPCServerDriver.Remove', goEmptyStruct), {
      error: 'VM not found: [REDACTED]',
    });
  });

  it('decodes SetConfigFromFlags sent as a *rpcdriver.RPCFlags interface', async () => {
    const arg = {
      name: GOB_NAMES.rpcFlags,
      value: { Values: new Map([['fake-cpu', { name: 'int', value: 8 }]]) },
    };
    assert.deepEqual(
      await client.call('RPCServerDriver.SetConfigFromFlags', goEmptyStruct, driverOptionsInterface, arg),
      {
        reply: {},
      },
    );
    assert.deepEqual(driver.flagValues, new Map([['fake-cpu', 8]]));
  });

  it('sends GetCreateFlags as []mcnflag.Flag that decodes back to the flags', async () => {
    const result = await client.call('RPCServerDriver.GetCreateFlags', mcnFlagSliceType);
    assert.deepEqual(result, { reply: FAKE_FLAGS.map(toGoFlag) });
  });
});
