// One whole sandbox (Harvester + Rancher control planes, stand-ins, front proxy) per
// test file: started before its tests, stopped after them, also when one fails.
import { after, before } from 'node:test';
import { startSandbox, type Sandbox, type SandboxOptions } from '../../sandbox/sandbox.js';

export interface SandboxFixture {
  readonly sandbox: Sandbox;
}

export function useSandbox(options: SandboxOptions = {}): SandboxFixture {
  let sandbox: Sandbox | undefined;
  before(async () => {
    sandbox = await startSandbox(options);
  });
  after(async () => {
    await sandbox?.stop();
  });
  return {
    get sandbox(): Sandbox {
      if (!sandbox) throw new Error('the sandbox is not started yet (use it inside a test)');
      return sandbox;
    },
  };
}
