// The driver's test files that need a sandbox but change nothing another file reads, run one
// after another on one sandbox (ADR 0031); each still runs by itself too. The order matters:
// driver-storage-options counts the VMs of the namespace, so it runs before driver-compat, whose
// held removal may still be finishing; driver-host-devices runs last, as it changes KubeVirt's
// feature gates and deletes the device kinds.
import '../support/shared-sandbox.js';
import '../driver-lifecycle_test.js';
import '../driver-credentials_test.js';
import '../driver-storage-options_test.js';
import '../driver-compat_test.js';
import '../driver-host-devices_test.js';
