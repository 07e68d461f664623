// The Harvester whose own `harvester` and `webhook` the sandbox runs (build-harvester.sh builds
// them from the Go module proxy), and where its chart puts them.
export const HARVESTER_VERSION = 'v1.8.0';

/** The chart's release namespace: the webhook's Service, certificates and the service account live here. */
export const HARVESTER_NAMESPACE = 'harvester-system';

/** The chart's service account for both Deployments (bound to cluster-admin by its rbac.yaml). */
export const HARVESTER_SERVICE_ACCOUNT = 'harvester';

/** The Service the webhook names in the configurations it registers (pkg/webhook/server/server.go). */
export const WEBHOOK_SERVICE = 'harvester-webhook';

/** The configurations the webhook registers (pkg/webhook/types.go). */
export const VALIDATING_CONFIG = 'harvester-validator';
export const MUTATING_CONFIG = 'harvester-mutator';
