// The stand-ins' and KubeVirt's test files on Harvester's control plane (no Rancher), one after
// another on one Harvester (ADR 0031); each still runs by itself too. Each works in namespaces
// of its own (generated names) and reads nothing cluster-wide another one writes: PVs of
// Harvester's CSI driver (none of them makes one in Harvester), devices (pcidevices only), load
// balancers (load-balancer only).
import '../../sandbox/standins/shared-harvester.js';
import '../../sandbox/kubevirt/kubevirt_test.js';
import '../../sandbox/standins/csi-hotplug_test.js';
import '../../sandbox/standins/load-balancer_test.js';
import '../../sandbox/standins/pcidevices_test.js';
