import assert from 'node:assert/strict';
import fs from 'node:fs';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { rancherFlagForField } from '../rancher/machine-config-fields.js';
import { configFromFlags, newDriverConfig } from './config/index.js';
import { defaultFlagValues, FLAG_TABLE, FLAGS, flagByName } from './config/flags.js';
import { rancherKubeconfig } from '../kube/testing/kubeconfig.js';
import type { FlagValue } from './machine-driver.js';
import { createArgsForHarvesterConfig, rancherFields } from './rancher-machine-config.js';

const EXAMPLE = new URL('../../../docs/examples/harvester-config.yaml', import.meta.url);

/**
 * What rancher-machine's create command hands the driver for these arguments: each
 * --harvester-<name>=<value> (or bare, for a bool) parsed by the flag's declared kind, as
 * its command-line library does (an int flag's text parsed as a decimal integer).
 */
function driverFlagValues(argv: readonly string[]): Map<string, FlagValue> {
  const values = defaultFlagValues();
  for (const arg of argv) {
    const m = /^--([^=]+)(?:=(.*))?$/s.exec(arg);
    assert.ok(m?.[1], `not a flag: ${arg}`);
    const spec = flagByName(m[1]);
    assert.ok(spec, `rancher-machine refuses an unknown flag: --${m[1]}`);
    const text = m[2];
    if (spec.kind === 'bool') {
      assert.equal(text, undefined, `--${spec.name} is passed bare`);
      values.set(spec.name, true);
    } else if (spec.kind === 'int') {
      assert.match(text ?? '', /^-?\d+$/, `--${spec.name}=${text} is not an integer to the flag parser`);
      values.set(spec.name, Number(text));
    } else values.set(spec.name, text ?? '');
  }
  return values;
}

describe('our flags as HarvesterConfig fields', () => {
  it('names each field as Rancher does, and Rancher passes it back as the same flag', () => {
    const fields = rancherFields();
    assert.equal(new Set(fields.map((f) => f.field)).size, fields.length, 'one field per flag');
    for (const { flag, field } of fields) {
      assert.equal(rancherFlagForField('harvester', field), `--${flag.name}`, field);
    }
    const byFlag = new Map(fields.map((f) => [f.flag.name, f]));
    for (const [flag, field, type] of [
      ['harvester-ip-pool-info', 'ipPoolInfo', 'string'],
      ['harvester-vm-labels', 'vmLabels', 'string'],
      ['harvester-vm-annotations', 'vmAnnotations', 'string'],
      ['harvester-host-device-info', 'hostDeviceInfo', 'string'],
      ['harvester-block-multi-queue', 'blockMultiQueue', 'boolean'],
      ['harvester-io-threads-policy', 'ioThreadsPolicy', 'string'],
      ['harvester-io-thread-count', 'ioThreadCount', 'string'],
      ['harvester-disk-info', 'diskInfo', 'string'],
      ['harvester-cpu-count', 'cpuCount', 'string'],
      ['harvester-enable-efi', 'enableEfi', 'boolean'],
      ['harvester-kubeconfig-content', 'kubeconfigContent', 'string'],
    ] as const) {
      assert.deepEqual([byFlag.get(flag)?.field, byFlag.get(flag)?.type], [field, type], flag);
    }
  });

  it('every flag reaches the driver with its value: strings as given, int flags from strings, bools bare', () => {
    const config: Record<string, unknown> = {};
    const expected = new Map<string, FlagValue>();
    FLAG_TABLE.forEach((flag, i) => {
      const field = rancherFields()[i]?.field ?? '';
      if (flag.kind === 'bool') {
        config[field] = true;
        expected.set(flag.name, true);
      } else if (flag.kind === 'int') {
        config[field] = String(1000 + i); // Rancher's schema makes an int flag a string field
        expected.set(flag.name, 1000 + i);
      } else if (flag === FLAGS.clusterName) {
        expected.set(flag.name, 'web'); // Rancher passes the provisioning cluster's name itself
      } else {
        // JSON, commas and equals signs pass as they are: one argument each.
        const value = `{"field":"${field}","list":["a=b","c, d"]}`;
        config[field] = value;
        expected.set(flag.name, value);
      }
    });
    const argv = createArgsForHarvesterConfig(
      { ...config, apiVersion: 'x', kind: 'HarvesterConfig', metadata: {} },
      'web',
    );
    const values = driverFlagValues(argv);
    for (const flag of FLAG_TABLE) {
      assert.deepEqual(values.get(flag.name), expected.get(flag.name), flag.name);
    }
  });

  it('a number left unquoted reaches Rancher as a float and is passed in Go’s %v: big counts break', () => {
    const argv = createArgsForHarvesterConfig({ ioThreadCount: 4294967295, cpuCount: 4 }, 'web');
    assert.ok(argv.includes('--harvester-cpu-count=4'));
    assert.ok(argv.includes('--harvester-io-thread-count=4.294967295e+09'));
    assert.throws(() => driverFlagValues(argv), /not an integer/);
  });

  it('drops what is not a field of the schema, false booleans and empty strings', () => {
    assert.deepEqual(
      createArgsForHarvesterConfig(
        {
          metadata: { name: 'x' },
          common: { cloudCredentialSecretName: 'c' },
          vmLabels: '',
          enableTpm: false,
          providerID: 'p',
          unknownField: 'x',
        },
        'web',
      ),
      ['--harvester-cluster-name=web'],
    );
  });
});

describe('docs/examples/harvester-config.yaml through Rancher to the driver', () => {
  it('gives the driver every extra field of ours: the address pool, labels, annotations, host devices, storage options', () => {
    const config = parse(fs.readFileSync(EXAMPLE, 'utf8')) as Record<string, unknown>;
    assert.equal(config['kind'], 'HarvesterConfig');
    const argv = createArgsForHarvesterConfig(config, 'web');
    const values = driverFlagValues(argv);
    // The kubeconfig comes from the cloud credential, in the job's environment.
    values.set(FLAGS.kubeconfigContent.name, rancherKubeconfig());
    const cfg = configFromFlags(values, newDriverConfig('web-pool1-abcde-x2v9q', '/store'));
    const options = cfg.HarvesterMachine;
    assert.equal(options.IPPoolInfo?.network, 'default/vlan100');
    assert.deepEqual(options.VMLabels, { app: 'web', tier: 'frontend' });
    assert.deepEqual(options.VMAnnotations, {
      'example.com/team': 'payments',
      'example.com/cost-centers': 'cc-1234, cc-5678',
    });
    assert.deepEqual(cfg.HostDeviceInfo?.hostDevices, [
      { name: 'hostdevice-1', deviceName: 'nvidia.com/TU104GL_TESLA_T4' },
    ]);
    assert.deepEqual(
      [cfg.BlockMultiQueue, cfg.IOThreadsPolicy, cfg.IOThreadCount],
      [true, 'supplementalPool', 2],
    );
    assert.deepEqual(
      cfg.DiskInfo?.disks.map((d) => [d.cache, d.io, d.dedicatedIOThread]),
      [
        ['none', 'native', true],
        ['writeback', 'threads', undefined],
      ],
    );
    assert.equal(cfg.CPU, 2);
  });
});
