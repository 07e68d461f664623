import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Command } from 'commander';
import { FLAG_TABLE, FLAGS } from '../driver/config/flags.js';
import { addDriverFlags, collectFlagValues } from './driver-flags.js';
import { UsageError } from './errors.js';

function parse(args: string[]): Record<string, unknown> {
  const command = addDriverFlags(
    new Command('create')
      .exitOverride()
      .configureOutput({ writeErr: () => undefined })
      .argument('<name>'),
  );
  command.parse(['m1', ...args], { from: 'user' });
  return command.opts();
}

describe('driver flags on the command line', () => {
  it('has one option per flag of the table, with its default and variable in the help', () => {
    const command = addDriverFlags(new Command('create'));
    assert.equal(command.options.length, FLAG_TABLE.length);
    const help = command.helpInformation().replace(/\s+/g, ' ');
    assert.ok(help.includes('(default: "default"; env: HARVESTER_VM_NAMESPACE)'));
    assert.ok(help.includes('(default: -1; env: HARVESTER_RESERVED_MEMORY_SIZE)'));
  });

  it('takes the command line first, then the variable, then the default', () => {
    const values = collectFlagValues(parse(['--harvester-cpu-count', '8', '--harvester-enable-efi']), {
      HARVESTER_CPU_COUNT: '4',
      HARVESTER_MEMORY_SIZE: '16',
      HARVESTER_VM_NAMESPACE: '',
    });
    assert.equal(values.get(FLAGS.cpuCount.name), 8);
    assert.equal(values.get(FLAGS.memorySize.name), 16);
    assert.equal(values.get(FLAGS.vmNamespace.name), 'default', 'an empty variable counts as unset');
    assert.equal(values.get(FLAGS.enableEfi.name), true);
    assert.equal(values.get(FLAGS.enableTpm.name), false);
    assert.equal(values.size, FLAG_TABLE.length);
  });

  it('reads boolean variables as rancher-machine does (strconv.ParseBool), and negative numbers', () => {
    assert.equal(collectFlagValues({}, { HARVESTER_ENABLE_TPM: 'false' }).get(FLAGS.enableTpm.name), false);
    assert.equal(collectFlagValues({}, { HARVESTER_ENABLE_TPM: 'T' }).get(FLAGS.enableTpm.name), true);
    assert.throws(() => collectFlagValues({}, { HARVESTER_ENABLE_TPM: 'yes' }), UsageError);
    assert.throws(
      () => collectFlagValues({}, { HARVESTER_CPU_COUNT: 'many' }),
      /HARVESTER_CPU_COUNT \(for --harvester-cpu-count\) must be a whole number/,
    );
    assert.equal(parse(['--harvester-reserved-memory-size', '-1'])['harvesterReservedMemorySize'], -1);
  });

  it('refuses a non-number for a number flag, naming it', () => {
    assert.throws(
      () => parse(['--harvester-disk-size', '40GiB']),
      /option '--harvester-disk-size <n>' argument '40GiB' is invalid/,
    );
  });
});
