import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { hookAnnotation } from '../constants.js';
import { removeHooksCommand } from './remove-hooks-command.js';
import { machinesWithHook, mustWaitForPreviousHolder } from './remove-hooks.js';
import type { CapiMachine } from '../common/types.js';

const machine = (name: string, annotations: Record<string, string>): CapiMachine => ({
  metadata: { name, namespace: 'fleet-default', annotations },
  spec: { clusterName: 'c', infrastructureRef: {} },
});

function capture(): { stream: Writable; text: () => string } {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      text += chunk.toString();
      done();
    },
  });
  return { stream, text: () => text };
}

describe('remove-hooks', () => {
  it("finds the Machines carrying this installation's hook only", () => {
    const ours = hookAnnotation('harvester-machine-cleanup');
    const other = hookAnnotation('another-installation');
    const found = machinesWithHook(
      [
        machine('a', { [ours]: 'harvester-machine-controller' }),
        machine('b', { [other]: 'x' }),
        machine('c', {}),
      ],
      'harvester-machine-cleanup',
    );
    assert.deepEqual(
      found.map((m) => m.metadata.name),
      ['a'],
    );
  });

  it('waits for a replica it took the Lease from, not for an earlier run of itself (a retried Job)', () => {
    assert.equal(mustWaitForPreviousHolder('harvester-machine-controller-7d9f8b6c5-x2v9q'), true);
    assert.equal(mustWaitForPreviousHolder('remove-hooks/hmc-remove-hooks-k8x2p'), false);
    assert.equal(mustWaitForPreviousHolder(''), false);
  });

  it('refuses a bad --hold or an unknown flag with exit 2, naming it, before talking to any cluster', async () => {
    for (const [argv, pattern] of [
      [['--hold', 'soon'], /^--hold: soon: expected a duration/],
      [['--hold'], /^--hold: a duration is required/],
      [['--no-such-flag'], /no-such-flag/],
    ] as const) {
      const stdout = capture();
      const stderr = capture();
      const code = await removeHooksCommand([...argv], {}, { stdout: stdout.stream, stderr: stderr.stream });
      assert.equal(code, 2, argv.join(' '));
      assert.match(stderr.text(), pattern);
      assert.equal(stdout.text(), '');
    }
  });

  it('prints its usage with --help and exits 0', async () => {
    const stdout = capture();
    const stderr = capture();
    assert.equal(
      await removeHooksCommand(['--help'], {}, { stdout: stdout.stream, stderr: stderr.stream }),
      0,
    );
    assert.match(stdout.text(), /^harvester-machine controller remove-hooks \[flags\]/);
    assert.match(stdout.text(), /--hold DURATION/);
  });

  it('outside a cluster and without --kubeconfig, fails with exit 1 saying what to pass', async () => {
    const stdout = capture();
    const stderr = capture();
    const code = await removeHooksCommand([], {}, { stdout: stdout.stream, stderr: stderr.stream });
    assert.equal(code, 1);
    assert.match(
      stderr.text(),
      /not in a cluster \(KUBERNETES_SERVICE_HOST unset or no service-account token\): pass --kubeconfig or RANCHER_KUBECONFIG/,
    );
  });
});
