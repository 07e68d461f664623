// Prints, one JSON object per line, what virt-operator would install for KubeVirt's virt-api
// and virt-controller in a namespace: every CRD of KubeVirt, the RBAC of the API server, the
// controller and the handler (cluster-wide roles included: kubevirt.io:view/edit/admin), virt-api's
// admission webhook configurations and its APIServices. The functions called are virt-operator's
// own (pkg/virt-operator/resource/generate), so the objects are KubeVirt's, not ours.
//
// build-kubevirt.sh copies this file into the kubevirt.io/kubevirt module and builds it there,
// beside virt-api and virt-controller; it is not part of any module of this repository.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"kubevirt.io/kubevirt/pkg/virt-operator/resource/generate/components"
	"kubevirt.io/kubevirt/pkg/virt-operator/resource/generate/rbac"
)

func main() {
	namespace := flag.String("namespace", "kubevirt", "the namespace KubeVirt is installed in")
	flag.Parse()

	crdMakers := []func() (*extv1.CustomResourceDefinition, error){
		components.NewKubeVirtCrd,
		components.NewVirtualMachineInstanceCrd, components.NewPresetCrd, components.NewReplicaSetCrd,
		components.NewVirtualMachineCrd, components.NewVirtualMachineInstanceMigrationCrd,
		components.NewVirtualMachineSnapshotCrd, components.NewVirtualMachineSnapshotContentCrd,
		components.NewVirtualMachineRestoreCrd, components.NewVirtualMachineInstancetypeCrd,
		components.NewVirtualMachineClusterInstancetypeCrd, components.NewVirtualMachinePoolCrd,
		components.NewMigrationPolicyCrd, components.NewVirtualMachinePreferenceCrd,
		components.NewVirtualMachineClusterPreferenceCrd, components.NewVirtualMachineExportCrd,
		components.NewVirtualMachineCloneCrd,
	}
	var objects []interface{}
	for _, newCrd := range crdMakers {
		crd, err := newCrd()
		if err != nil {
			fail(err)
		}
		objects = append(objects, crd)
	}
	var roles []runtime.Object
	roles = append(roles, rbac.GetAllCluster()...)
	roles = append(roles, rbac.GetAllApiServer(*namespace)...)
	roles = append(roles, rbac.GetAllController(*namespace)...)
	roles = append(roles, rbac.GetAllHandler(*namespace)...)
	for _, r := range roles {
		objects = append(objects, r)
	}
	objects = append(objects,
		components.NewVirtAPIMutatingWebhookConfiguration(*namespace),
		components.NewVirtAPIValidatingWebhookConfiguration(*namespace),
	)
	for _, s := range components.NewVirtAPIAPIServices(*namespace) {
		objects = append(objects, s)
	}

	out := json.NewEncoder(os.Stdout)
	for _, o := range objects {
		if err := out.Encode(o); err != nil {
			fail(err)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "kubevirt-manifests:", err)
	os.Exit(1)
}
