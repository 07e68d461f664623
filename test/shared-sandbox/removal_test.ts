// The removal's test files, one after another on one sandbox (ADR 0031); each still runs by
// itself too. Their guest clusters have names of their own, so no whole-cluster removal of one
// reaches another's volumes. cli-removal runs first: it compares every volume and Secret of the
// namespace before and after a removal, which a removal still finishing would disturb.
import '../support/shared-sandbox.js';
import '../cli-removal_test.js';
import '../driver-removal_test.js';
import '../interop/rancher-machine-cli_test.js';
