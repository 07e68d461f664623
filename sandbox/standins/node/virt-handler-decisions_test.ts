import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { VirtualMachineInstance, VmiPhase } from '../types.js';
import { StepClocks, vmiStep } from './virt-handler-decisions.js';

const vmi = (phase: VmiPhase, deleting = false): VirtualMachineInstance =>
  ({
    metadata: { name: 'v', ...(deleting ? { deletionTimestamp: 'now' } : {}) },
    spec: {},
    status: { phase },
  }) as unknown as VirtualMachineInstance;

describe("virt-handler stand-in's decisions", () => {
  it('starts a Scheduled VMI, runs a Running one, leaves a final one', () => {
    assert.equal(vmiStep(vmi('Scheduled'), false), 'start');
    assert.equal(vmiStep(vmi('Running'), false), 'running');
    assert.equal(vmiStep(vmi('Succeeded', true), true), undefined);
    assert.equal(vmiStep(vmi('Pending'), false), undefined);
  });

  it('shuts the guest down when the VMI or its launcher pod is being deleted', () => {
    assert.equal(vmiStep(vmi('Running', true), false), 'shutdown');
    assert.equal(vmiStep(vmi('Scheduled'), true), 'shutdown');
    assert.equal(vmiStep(vmi('Pending', true), false), undefined);
  });

  it("counts a step's delay from when the VMI entered it", () => {
    let now = 1_000;
    const clocks = new StepClocks(() => now);
    assert.equal(clocks.remaining('u', 'Scheduled', 500), 500);
    now += 200;
    assert.equal(clocks.remaining('u', 'Scheduled', 500), 300);
    assert.equal(clocks.remaining('u', 'Running', 500), 500);
    now += 600;
    assert.equal(clocks.remaining('u', 'Running', 500), 0);
  });
});
