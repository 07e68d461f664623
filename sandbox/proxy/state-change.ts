// What virt-api (kubevirt v1.7.0, pkg/virt-api/rest/lifecycle.go) does for PUT
// .../virtualmachines/<name>/{start,stop,restart}, as pure decisions: the answer it refuses
// with, or the JSON patch it sends (to the VM's status for state change requests, to its
// spec for the run strategy). Each patch begins with a "test" of the value it read, so a
// concurrent change makes the patch fail instead of being overwritten.

export type LifecycleAction = 'start' | 'stop' | 'restart';

export interface StateChangeRequest {
  action: 'Start' | 'Stop';
  data?: Record<string, string>;
  uid?: string;
}

export interface VmView {
  metadata: { name?: string };
  spec?: { runStrategy?: string; running?: boolean | null };
  status?: Record<string, unknown> & { stateChangeRequests?: StateChangeRequest[] | null };
}

export interface VmiView {
  metadata: { uid?: string };
  status?: { phase?: string };
}

export type JsonPatchOp =
  { op: 'test' | 'add' | 'replace'; path: string; value: unknown } | { op: 'remove'; path: string };

export type Decision =
  /** 409, worded "Operation cannot be fulfilled on virtualmachine.kubevirt.io "<vm>": <cause>". */
  | { kind: 'conflict'; cause: string }
  /** 500, "Internal error occurred: <cause>". */
  | { kind: 'internal'; cause: string }
  | { kind: 'patch'; target: 'status' | 'spec'; ops: JsonPatchOp[] };

const isFinal = (vmi: VmiView): boolean =>
  vmi.status?.phase === 'Failed' || vmi.status?.phase === 'Succeeded';

/** spec.running and spec.runStrategy as KubeVirt reads them (VirtualMachine.RunStrategy()). */
export function runStrategyOf(vm: VmView): { strategy: string } | { error: string } {
  const running = vm.spec?.running;
  const strategy = vm.spec?.runStrategy;
  if (running != null && strategy != null) return { error: 'running and runstrategy are mutually exclusive' };
  if (running != null) return { strategy: running ? 'Always' : 'Halted' };
  return { strategy: strategy ?? 'Halted' };
}

/** Go's equality.Semantic.DeepEqual with the zero value: null, "", 0, false, empty lists/maps. */
function isZero(value: unknown): boolean {
  if (value === null || value === undefined || value === '' || value === 0 || value === false) return true;
  if (Array.isArray(value)) return value.length === 0;
  if (typeof value === 'object') return Object.values(value).every(isZero);
  return false;
}

/** The patch that adds state change requests, or why it cannot (virt-api getChangeRequestJson). */
export function changeRequestPatch(vm: VmView, changes: StateChangeRequest[]): Decision {
  const status = vm.status;
  const ops: JsonPatchOp[] = [];
  if (isZero(status)) {
    ops.push({ op: 'add', path: '/status', value: { stateChangeRequests: changes } });
  } else {
    const current = status?.stateChangeRequests ?? [];
    ops.push({ op: 'test', path: '/status/stateChangeRequests', value: status?.stateChangeRequests ?? null });
    if (current.length === 0) {
      ops.push({ op: 'add', path: '/status/stateChangeRequests', value: changes });
    } else if (changes.length === 1 && changes[0]?.action === 'Stop') {
      // A stop request replaces whatever was pending.
      ops.push({ op: 'replace', path: '/status/stateChangeRequests', value: changes });
    } else {
      return { kind: 'internal', cause: 'unable to complete request: stop/start already underway' };
    }
    if (status?.startFailure != null) ops.push({ op: 'remove', path: '/status/startFailure' });
  }
  return { kind: 'patch', target: 'status', ops };
}

/** The patch that sets the run strategy (virt-api getRunningPatch). */
function runningPatch(vm: VmView, running: boolean): Decision {
  if (vm.spec?.runStrategy != null) {
    return {
      kind: 'patch',
      target: 'spec',
      ops: [
        { op: 'test', path: '/spec/runStrategy', value: vm.spec.runStrategy },
        { op: 'replace', path: '/spec/runStrategy', value: running ? 'Always' : 'Halted' },
      ],
    };
  }
  return {
    kind: 'patch',
    target: 'spec',
    ops: [
      { op: 'test', path: '/spec/running', value: vm.spec?.running ?? null },
      { op: 'replace', path: '/spec/running', value: running },
    ],
  };
}

const stop = (vmi: VmiView): StateChangeRequest => ({ action: 'Stop', uid: vmi.metadata.uid ?? '' });
const START: StateChangeRequest = { action: 'Start' };

export function decideStart(vm: VmView, vmi: VmiView | undefined): Decision {
  const phase = vmi?.status?.phase ?? '';
  if (vmi && !isFinal(vmi) && phase !== 'Unknown' && phase !== '') {
    return { kind: 'conflict', cause: 'VM is already running' };
  }
  const read = runStrategyOf(vm);
  if ('error' in read) return { kind: 'internal', cause: read.error };
  const { strategy } = read;
  switch (strategy) {
    case 'Halted':
      return runningPatch(vm, true);
    case 'RerunOnFailure':
    case 'Manual': {
      const finished =
        (strategy === 'RerunOnFailure' && phase === 'Succeeded') ||
        (strategy === 'Manual' && vmi && isFinal(vmi));
      if (strategy === 'RerunOnFailure' && phase === 'Failed') {
        return { kind: 'conflict', cause: 'RerunOnFailure does not support starting VM from failed state' };
      }
      return changeRequestPatch(vm, finished && vmi ? [stop(vmi), START] : [START]);
    }
    case 'Always':
    case 'Once':
      return { kind: 'conflict', cause: `${strategy} does not support manual start requests` };
    default:
      // virt-api falls through and answers 202 without changing anything.
      return { kind: 'patch', target: 'status', ops: [] };
  }
}

/**
 * Stop without options, as the driver sends it. (virt-api also accepts a gracePeriod, which
 * it first writes into the running VMI; the sandbox does not model that.)
 */
export function decideStop(vm: VmView, vmi: VmiView | undefined): Decision {
  const read = runStrategyOf(vm);
  if ('error' in read) return { kind: 'internal', cause: read.error };
  const { strategy } = read;
  const running = vmi !== undefined && !isFinal(vmi);
  switch (strategy) {
    case 'Halted':
      if (!running) return { kind: 'conflict', cause: 'VM is not running' };
      return {
        kind: 'conflict',
        cause: 'Halted only supports manual stop requests with a shorter graceperiod',
      };
    case 'RerunOnFailure':
    case 'Manual':
      if (!running) return { kind: 'conflict', cause: 'VM is not running' };
      return changeRequestPatch(vm, [stop(vmi)]);
    case 'Always':
    case 'Once':
      return runningPatch(vm, false);
    default:
      return { kind: 'patch', target: 'status', ops: [] };
  }
}

export function decideRestart(vm: VmView, vmi: VmiView | undefined): Decision {
  const read = runStrategyOf(vm);
  if ('error' in read) return { kind: 'internal', cause: read.error };
  const { strategy } = read;
  if (strategy === 'Halted' || strategy === 'Once') {
    // "RunStategy" is virt-api's own spelling.
    return { kind: 'conflict', cause: `RunStategy ${strategy} does not support manual restart requests` };
  }
  if (!vmi) return { kind: 'conflict', cause: 'VM is not running: Halted' };
  return changeRequestPatch(vm, [stop(vmi), START]);
}
