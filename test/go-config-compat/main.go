// The Go driver's saved Driver object, as two Go programs would read and write it: the Go
// driver at 0b90d05 (docs/upstream/go-driver.md#saved-driver-config) and the same with
// docker-machine-driver-harvester#96's HostDeviceInfo field
// (docs/upstream/harvester-host-devices.md#the-go-driver-proposal). Reads a config.json
// Driver object on stdin, json.Unmarshal's it into both (fails on a type a Go driver would
// refuse) and prints what each json.Marshal's back: {"today": …, "pr96": …}. Stdlib only.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// BaseDriver stands for rancher/machine's drivers.BaseDriver (embedded, fields flattened).
type BaseDriver struct {
	IPAddress      string
	IPv6Address    string
	MachineName    string
	SSHUser        string
	SSHPort        int
	SSHKeyPath     string
	StorePath      string
	SwarmMaster    bool
	SwarmHost      string
	SwarmDiscovery string
}

type Disk struct {
	ImageName        string `json:"imageName"`
	StorageClassName string `json:"storageClassName"`
	Size             int    `json:"size"`
	BootOrder        uint   `json:"bootOrder"`
	Bus              string `json:"bus"`
	Type             string `json:"type"`
	HotPlugAble      bool   `json:"hotPlugAble"`
}

type DiskInfo struct {
	Disks []Disk `json:"disks"`
}

type NetworkInterface struct {
	NetworkName string `json:"networkName"`
	MACAddress  string `json:"macAddress"`
	Model       string `json:"model"`
	Type        string `json:"type"`
}

type NetworkInfo struct {
	NetworkInterfaces []NetworkInterface `json:"interfaces"`
}

type VGPURequest struct {
	Name       string `json:"name"`
	DeviceName string `json:"deviceName"`
}

type VGPUInfo struct {
	VGPURequests []VGPURequest `json:"vGPURequests"`
}

// ClaimRequest and HostDevice stand for kubevirt.io/api v1.7.0 core/v1's.
type ClaimRequest struct {
	ClaimName   *string `json:"claimName,omitempty"`
	RequestName *string `json:"requestName,omitempty"`
}

type HostDevice struct {
	Name          string `json:"name"`
	DeviceName    string `json:"deviceName,omitempty"`
	*ClaimRequest `json:",inline"`
	Tag           string `json:"tag,omitempty"`
}

type HostDeviceInfo struct {
	HostDevices []HostDevice `json:"hostDevices"`
}

type harvesterHead struct {
	KubeConfigContent    string
	VMNamespace          string
	VMAffinity           string
	ClusterType          string
	ClusterID            string
	ClusterName          string
	ServerVersion        string
	CPU                  int
	CPUModel             string
	MemorySize           string
	ReservedMemorySize   string
	DiskSize             string
	DiskBus              string
	ImageName            string
	DiskInfo             *DiskInfo
	KeyPairName          string
	SSHPrivateKeyPath    string
	SSHPublicKey         string
	SSHPassword          string
	AddUserToDockerGroup bool
	NetworkType          string
	NetworkName          string
	NetworkModel         string
	NetworkInfo          *NetworkInfo
	CloudConfig          string
	UserData             string
	NetworkData          string
	EnableEFI            bool
	EnableSecureBoot     bool
	VGPUInfo             *VGPUInfo
}

type harvesterTail struct {
	CPUPinning            bool
	IsolateEmulatorThread bool
	EnableTPM             bool
}

// DriverToday is the Go driver at 0b90d05.
type DriverToday struct {
	*BaseDriver
	harvesterHead
	harvesterTail
}

// DriverPR96 adds HostDeviceInfo right after VGPUInfo.
type DriverPR96 struct {
	*BaseDriver
	harvesterHead
	HostDeviceInfo *HostDeviceInfo
	harvesterTail
}

// StorageDisk is Disk with the storage options of harvester#11550 as harvester-machine saves
// them (docs/upstream/go-driver.md#storage-options): KubeVirt's names, omitempty.
type StorageDisk struct {
	ImageName         string `json:"imageName"`
	StorageClassName  string `json:"storageClassName"`
	Size              int    `json:"size"`
	BootOrder         uint   `json:"bootOrder"`
	Bus               string `json:"bus"`
	Type              string `json:"type"`
	HotPlugAble       bool   `json:"hotPlugAble"`
	Cache             string `json:"cache,omitempty"`
	IO                string `json:"io,omitempty"`
	DedicatedIOThread bool   `json:"dedicatedIOThread,omitempty"`
}

type StorageDiskInfo struct {
	Disks []StorageDisk `json:"disks"`
}

// DriverStorage is a Go driver with #96 and the storage options: the disks with their
// options, and three fields after EnableTPM, named after their flags (omitempty, as
// harvester-machine leaves them out while unset).
type DriverStorage struct {
	*BaseDriver
	KubeConfigContent    string
	VMNamespace          string
	VMAffinity           string
	ClusterType          string
	ClusterID            string
	ClusterName          string
	ServerVersion        string
	CPU                  int
	CPUModel             string
	MemorySize           string
	ReservedMemorySize   string
	DiskSize             string
	DiskBus              string
	ImageName            string
	DiskInfo             *StorageDiskInfo
	KeyPairName          string
	SSHPrivateKeyPath    string
	SSHPublicKey         string
	SSHPassword          string
	AddUserToDockerGroup bool
	NetworkType          string
	NetworkName          string
	NetworkModel         string
	NetworkInfo          *NetworkInfo
	CloudConfig          string
	UserData             string
	NetworkData          string
	EnableEFI            bool
	EnableSecureBoot     bool
	VGPUInfo             *VGPUInfo
	HostDeviceInfo       *HostDeviceInfo `json:",omitempty"`
	harvesterTail
	BlockMultiQueue bool   `json:",omitempty"`
	IOThreadsPolicy string `json:",omitempty"`
	IOThreadCount   uint32 `json:",omitempty"`
}

func main() {
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail("read: %v", err)
	}
	today := DriverToday{BaseDriver: &BaseDriver{}}
	if err := json.Unmarshal(in, &today); err != nil {
		fail("today's Go driver cannot load it: %v", err)
	}
	pr96 := DriverPR96{BaseDriver: &BaseDriver{}}
	if err := json.Unmarshal(in, &pr96); err != nil {
		fail("the Go driver with #96 cannot load it: %v", err)
	}
	storage := DriverStorage{BaseDriver: &BaseDriver{}}
	if err := json.Unmarshal(in, &storage); err != nil {
		fail("a Go driver with the storage options cannot load it: %v", err)
	}
	out, err := json.Marshal(map[string]any{"today": today, "pr96": pr96, "storage": storage})
	if err != nil {
		fail("marshal: %v", err)
	}
	os.Stdout.Write(out)
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}
