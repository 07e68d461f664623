// Harvester's own processes and the rancher-machine interop files that change nothing another
// file reads, one after another on one sandbox (ADR 0031); each still runs by itself too.
// harvester-own runs first: it checks what Harvester made of the sandbox's own objects at start.
import '../support/shared-sandbox.js';
import '../harvester-own_test.js';
import '../interop/pool-config_test.js';
import '../interop/empty-root_test.js';
import '../interop/rancher-secret-store_test.js';
