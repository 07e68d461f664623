// The CLI's test files that need a sandbox, one after another on one sandbox (ADR 0031); each
// still runs by itself too. cli-volumes runs first: it reports every volume of the namespace and
// expects only its own.
import '../support/shared-sandbox.js';
import '../cli-volumes_test.js';
import '../cli-doctor_test.js';
import '../cli-lifecycle_test.js';
