// The Go driver's waits, for the benchmark's baseline: mcnutils.WaitForSpecific(f, 120, 5 s)
// checks, sleeps 5 s, checks again. Create waits for Running (GetState: GET the VM, GET the
// VMI, phase Running) and then for an IP (GetIP: GetState again, GET the VMI, interfaces[0]);
// Remove waits until GET of the VM is NotFound. These run beside our plugin on the same
// objects, started at the instant the Go driver would start them, so the difference is the
// waiting strategy alone (Go: harvester/create.go waitForReady/waitForIP, harvester.go
// waitRemoved).
import type { KubeClient } from '../src/kube/client.js';
import { Resources } from '../src/kube/resources.js';
import type { VirtualMachineInstance } from '../src/harvester/types.js';

export const GO_POLL_INTERVAL_MS = 5_000;
const GO_POLL_ATTEMPTS = 120;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function waitForSpecific(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < GO_POLL_ATTEMPTS; i++) {
    if (await check()) return;
    await sleep(GO_POLL_INTERVAL_MS);
  }
  throw new Error(`Go-style wait: not done after ${GO_POLL_ATTEMPTS} polls`);
}

async function running(client: KubeClient, namespace: string, name: string): Promise<boolean> {
  if (!(await client.find(Resources.virtualMachine, { namespace, name }))) return false;
  const vmi = await client.find<VirtualMachineInstance>(Resources.virtualMachineInstance, {
    namespace,
    name,
  });
  return vmi?.status?.phase === 'Running';
}

/** Resolves (with performance.now()) when the Go driver's create would stop waiting. */
export async function goStyleWaitReady(client: KubeClient, namespace: string, name: string): Promise<number> {
  await waitForSpecific(() => running(client, namespace, name));
  await waitForSpecific(async () => {
    if (!(await running(client, namespace, name))) return false;
    const vmi = await client.find<VirtualMachineInstance>(Resources.virtualMachineInstance, {
      namespace,
      name,
    });
    return Boolean(vmi?.status?.interfaces?.[0]?.ipAddress);
  });
  return performance.now();
}

/** Resolves (with performance.now()) when the Go driver's remove would stop waiting. */
export async function goStyleWaitRemoved(
  client: KubeClient,
  namespace: string,
  name: string,
): Promise<number> {
  await waitForSpecific(
    async () => (await client.find(Resources.virtualMachine, { namespace, name })) === undefined,
  );
  return performance.now();
}
