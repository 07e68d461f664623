// The KubeVirt the sandbox runs, and where: the facts behind the choice are in
// docs/upstream/kubevirt.md#which-kubevirt-harvester-runs.
//
// Harvester v1.8.0 and v1.8.1 ship KubeVirt 1.7.0 (v1.8.2: 1.7.4); the Go module proxy serves
// kubevirt.io/kubevirt v1.7.0 and no later 1.7 patch, so v1.7.0 it is.
export const KUBEVIRT_VERSION = 'v1.7.0';

/**
 * KubeVirt's components find their namespace in the pod's service-account mount and fall back
 * to `kubevirt` without one (kubevirt.io/client-go util.GetNamespace): outside a pod, as here,
 * that is where they look for their KubeVirt CR, CA bundles and leader lease. Harvester installs
 * KubeVirt in harvester-system.
 */
export const KUBEVIRT_NAMESPACE = 'kubevirt';

/** The KubeVirt CR's name in Harvester (its chart's kubevirt sub-chart). */
export const KUBEVIRT_CR = 'kubevirt';

/** No image is pulled here: the name only shows in the launcher pods and VMI status. */
export const LAUNCHER_IMAGE = `kubevirt/virt-launcher:${KUBEVIRT_VERSION}`;
export const EXPORTER_IMAGE = `kubevirt/virt-exportserver:${KUBEVIRT_VERSION}`;
