// One real control plane per test file: started before the tests, stopped after
// them (also when one fails), with a fresh namespace per test.
import { after, before } from 'node:test';
import {
  startControlPlane,
  type ControlPlane,
  type ControlPlaneOptions,
} from '../../sandbox/control-plane/control-plane.js';
import { installCrds, type CrdSet } from '../../sandbox/crds/install.js';

export interface ControlPlaneFixture {
  /** Valid inside tests (after `before` ran). */
  readonly cp: ControlPlane;
}

export function useControlPlane(
  options: ControlPlaneOptions & { crds?: CrdSet | false } = {},
): ControlPlaneFixture {
  let cp: ControlPlane | undefined;
  before(async () => {
    const crds = options.crds;
    cp = await startControlPlane({
      ...options,
      ...(crds !== false
        ? { beforeControllerManager: (admin) => installCrds(admin, crds ?? 'all').then(() => undefined) }
        : {}),
    });
  });
  after(async () => {
    await cp?.stop();
  });
  return {
    get cp(): ControlPlane {
      if (!cp) throw new Error('the control plane is not started yet (use it inside a test)');
      return cp;
    },
  };
}
