// Credentials in tests: waiting until an expired one is really refused.
import { untilCredentialRefused } from '../../sandbox/control-plane/access.js';

/** Waits until a kubeconfig is refused (the apiserver caches a bootstrap token up to 10 s). */
export async function untilRejected(kubeconfig: string, namespace = 'default'): Promise<void> {
  await untilCredentialRefused(kubeconfig, namespace, 25_000);
}
