// The Rancher local cluster's kubeconfig for the controller and its remove-hooks command,
// by client-go's rules (src/kube/kubeconfig-loading.ts).
import { KubeconfigLoadError, loadKubeconfig, type LoadedKubeconfig } from '../../kube/kubeconfig-loading.js';
import { ConfigError, type ControllerConfig } from './config.js';

/**
 * client-go's BuildConfigFromFlags: the explicit file, else the pod's service account (its
 * projected token read again when it rotates), else $KUBECONFIG or ~/.kube/config.
 */
export function rancherKubeconfig(
  config: Pick<ControllerConfig, 'kubeconfigPath' | 'kubeContext'>,
  env: Record<string, string | undefined>,
  inClusterRoot = '',
): LoadedKubeconfig {
  try {
    return loadKubeconfig({
      ...(config.kubeconfigPath ? { explicitPath: config.kubeconfigPath } : {}),
      ...(config.kubeContext ? { context: config.kubeContext } : {}),
      env,
      ...(env['HOME'] ? { home: env['HOME'] } : {}),
      inCluster: 'first',
      inClusterRoot,
    });
  } catch (err) {
    if (err instanceof KubeconfigLoadError) {
      throw new ConfigError(`${err.message}: pass --kubeconfig or RANCHER_KUBECONFIG, or run in a cluster`);
    }
    throw err;
  }
}
