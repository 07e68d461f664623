// Credentials in tests: waiting until an expired one is really refused.
import { KubeClient } from '../../src/kube/client.js';
import { isCredentialRejected } from '../../src/kube/errors.js';
import { Resources } from '../../src/kube/resources.js';
import { eventually } from './eventually.js';

/** Waits until a kubeconfig is refused (the apiserver caches a bootstrap token up to 10 s). */
export async function untilRejected(kubeconfig: string, namespace = 'default'): Promise<void> {
  const client = KubeClient.fromKubeconfig(kubeconfig, {
    retry: { attempts: 1, baseDelayMs: 0, maxDelayMs: 0 },
  });
  try {
    await eventually(
      'the expired credential is refused',
      async () => {
        const err = await client.list(Resources.virtualMachine, { namespace }).then(
          () => undefined,
          (e: unknown) => e,
        );
        return isCredentialRejected(err);
      },
      25_000,
    );
  } finally {
    client.close();
  }
}
