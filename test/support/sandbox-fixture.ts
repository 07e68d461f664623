// One whole sandbox (Harvester + Rancher control planes, stand-ins, front proxy) per
// test file: started before its tests, stopped after them, also when one fails.
// A file that runs several test files one after another (test/shared-sandbox/) imports
// ./shared-sandbox.js first: then every useSandbox() of the process answers with that one
// sandbox, started before the file's first test and stopped after its last (ADR 0031).
import { after, before } from 'node:test';
import { startSandbox, type Sandbox, type SandboxOptions } from '../../sandbox/sandbox.js';

export interface SandboxFixture {
  readonly sandbox: Sandbox;
}

let shared: SandboxFixture | undefined;

export function useSandbox(options: SandboxOptions = {}): SandboxFixture {
  if (shared) {
    if (Object.keys(options).length > 0) {
      throw new Error(
        `a test file sharing its process's sandbox asked for its own options (${Object.keys(options).join(', ')}): run it by itself`,
      );
    }
    return shared;
  }
  return sandboxAround(options);
}

/**
 * One sandbox for every test file this process runs: to be called at the top level of a
 * module imported before those files, so that its hooks belong to the whole process.
 */
export function shareOneSandbox(start: typeof startSandbox = startSandbox): void {
  if (shared) throw new Error('this process shares one sandbox already');
  shared = sandboxAround({}, start);
}

function sandboxAround(options: SandboxOptions, start: typeof startSandbox = startSandbox): SandboxFixture {
  let sandbox: Sandbox | undefined;
  before(async () => {
    sandbox = await start(options);
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
