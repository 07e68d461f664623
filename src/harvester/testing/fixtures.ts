// Test fixtures shared by the domain tests: a Go driver config.json driver object, and
// small builders for VMs, VMIs and PVCs. (The fake kubeconfig is in kube/testing.)

import type { PersistentVolumeClaim, VirtualMachine, VirtualMachineInstance, Volume } from '../types.js';

/**
 * The driver object of a config.json written by a newer Go driver (json.Marshal, compact):
 * Go's HTML-safe escapes (\u0026), an unknown nested key in DiskInfo, HostDeviceInfo where
 * docker-machine-driver-harvester#96 marshals it (with a key of kubevirtv1.HostDevice we do not
 * read, "tag"), and an unknown top-level key, an integer beyond JavaScript's exact range.
 */
export const GO_CONFIG_JSON =
  '{"IPAddress":"10.52.0.17","IPv6Address":"","MachineName":"mycluster-pool1-7f8d9c5b6-x2v9q","SSHUser":"ubuntu",' +
  '"SSHPort":22,"SSHKeyPath":"/home/machine/.docker/machine/machines/mycluster-pool1-7f8d9c5b6-x2v9q/id_rsa",' +
  '"StorePath":"/home/machine/.docker/machine","SwarmMaster":false,"SwarmHost":"","SwarmDiscovery":"",' +
  '"KubeConfigContent":"apiVersion: v1\\nkind: Config\\n","VMNamespace":"default","VMAffinity":"",' +
  '"ClusterType":"imported","ClusterID":"c-m-abcd1234","ClusterName":"mycluster","ServerVersion":"v1.4.1",' +
  '"CPU":2,"CPUModel":"","MemorySize":"4Gi","ReservedMemorySize":"256Mi","DiskSize":"0","DiskBus":"",' +
  '"ImageName":"","DiskInfo":{"disks":[{"imageName":"default/image-abc12","storageClassName":"","size":40,' +
  '"bootOrder":1,"bus":"virtio","type":"","hotPlugAble":false,"cacheMode":"none"}]},"KeyPairName":"",' +
  '"SSHPrivateKeyPath":"","SSHPublicKey":"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeFakeFakeFake machine\\n",' +
  '"SSHPassword":"","AddUserToDockerGroup":false,"NetworkType":"","NetworkName":"","NetworkModel":"",' +
  '"NetworkInfo":{"interfaces":[{"networkName":"default/vlan1","macAddress":"","model":"virtio","type":""}]},' +
  '"CloudConfig":"/tmp/modules/cloud-config.yaml","UserData":"#cloud-config\\nruncmd:\\n- echo a \\u0026\\u0026 echo b\\n",' +
  '"NetworkData":"","EnableEFI":true,"EnableSecureBoot":true,"VGPUInfo":null,' +
  '"HostDeviceInfo":{"hostDevices":[{"name":"pci1","deviceName":"intel.com/82599","tag":"nic"}]},"CPUPinning":false,' +
  '"IsolateEmulatorThread":false,"EnableTPM":false,"FutureCounter":9007199254740993}';

export function pvc(name: string, namespace: string, labels?: Record<string, string>): PersistentVolumeClaim {
  return { metadata: { name, namespace, ...(labels ? { labels } : {}) }, spec: {} };
}

export function pvcVolume(name: string, claimName: string, hotpluggable = false): Volume {
  return { name, persistentVolumeClaim: hotpluggable ? { claimName, hotpluggable } : { claimName } };
}

export function vmWith(
  name: string,
  namespace: string,
  volumes: Volume[],
  annotations?: Record<string, string>,
): VirtualMachine {
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachine',
    metadata: { name, namespace, uid: `uid-${namespace}-${name}`, ...(annotations ? { annotations } : {}) },
    spec: { runStrategy: 'RerunOnFailure', template: { spec: { domain: { devices: {} }, volumes } } },
  };
}

export function vmiWith(
  name: string,
  namespace: string,
  status: NonNullable<VirtualMachineInstance['status']>,
  volumes?: Volume[],
): VirtualMachineInstance {
  return {
    metadata: { name, namespace },
    spec: { domain: { devices: {} }, ...(volumes ? { volumes } : {}) },
    status,
  };
}
