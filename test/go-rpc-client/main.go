// go-rpc-client talks to a docker-machine driver plugin the way rancher-machine does
// (launch with MACHINE_PLUGIN_TOKEN=42, first stdout line is the address, net/rpc over
// HTTP CONNECT with gob), using only Go's standard library, and checks the answers.
//
//	go-rpc-client run <plugin-command> [args...]   run the interop scenario
//	go-rpc-client fixtures                         print Go's encodings of protocol values
//	go-rpc-client fixtures-ts                      the same, as src/plugin/testing/go-fixtures.ts
//	go-rpc-client decode <kind> <hex>              decode our encoder's bytes as Go would
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/rpc"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fail("usage: go-rpc-client run|fixtures|fixtures-ts|decode ...")
	}
	switch os.Args[1] {
	case "fixtures":
		printFixtures(false)
	case "fixtures-ts":
		printFixtures(true)
	case "decode":
		if len(os.Args) != 4 {
			fail("usage: go-rpc-client decode <kind> <hex>")
		}
		decodeHex(os.Args[2], os.Args[3])
	case "run":
		if len(os.Args) < 3 {
			fail("usage: go-rpc-client run <plugin-command> [args...]")
		}
		runScenario(os.Args[2], os.Args[3:])
	default:
		fail("unknown mode %q", os.Args[1])
	}
}

// plugin is a launched plugin process, its output forwarded as rancher-machine does.
type plugin struct {
	cmd         *exec.Cmd
	addr        string
	mu          sync.Mutex
	machineName string
	exited      chan error
}

func launch(command string, args []string) *plugin {
	// rancher-machine runs exec.Command(binaryPath, os.Args...).
	cmd := exec.Command(command, append(args, os.Args...)...)
	cmd.Env = append(os.Environ(), "MACHINE_PLUGIN_TOKEN=42", "MACHINE_PLUGIN_DRIVER_NAME=fake")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		fail("stdout pipe: %v", err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		fail("stderr pipe: %v", err)
	}
	if err := cmd.Start(); err != nil {
		fail("start plugin: %v", err)
	}
	p := &plugin{cmd: cmd, exited: make(chan error, 1)}
	outScanner := bufio.NewScanner(stdout)
	errScanner := bufio.NewScanner(stderr)
	addrCh := make(chan string, 1)
	go func() {
		outScanner.Scan()
		addrCh <- strings.TrimSpace(outScanner.Text())
		for outScanner.Scan() {
			fmt.Printf("(%s) %s\n", p.name(), outScanner.Text())
		}
	}()
	go func() {
		for errScanner.Scan() {
			fmt.Printf("(%s) DBG | %s\n", p.name(), errScanner.Text())
		}
	}()
	select {
	case p.addr = <-addrCh:
	case <-time.After(10 * time.Second):
		fail("Failed to dial the plugin server in 10s")
	}
	go func() { p.exited <- cmd.Wait() }()
	return p
}

func (p *plugin) name() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.machineName
}

func (p *plugin) setName(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.machineName = name
}

func runScenario(command string, args []string) {
	p := launch(command, args)
	client, err := rpc.DialHTTP("tcp", p.addr)
	if err != nil {
		fail("DialHTTP %s: %v", p.addr, err)
	}
	call := func(method string, arg, reply interface{}) error {
		return client.Call("RPCServerDriver."+method, arg, reply)
	}

	var version int
	must(call("GetVersion", struct{}{}, &version))
	expect("GetVersion", version, 1)
	version = 0
	must(client.Call("RpcServerDriver.GetVersion", struct{}{}, &version))
	expect("GetVersion on RpcServerDriver", version, 1)

	rawIn := []byte(`{"MachineName":"m1","StorePath":"/tmp/store","SSHPort":22}`)
	must(call("SetConfigRaw", rawIn, nil))
	var name string
	must(call("GetMachineName", struct{}{}, &name))
	expect("GetMachineName", name, "m1")
	p.setName(name)

	var driverName string
	must(call("DriverName", struct{}{}, &driverName))
	expect("DriverName", driverName, "fake")

	var flags []Flag
	must(call("GetCreateFlags", struct{}{}, &flags))
	expect("GetCreateFlags", flags, []Flag{
		&StringFlag{Name: "fake-kc", Usage: "kubeconfig", EnvVar: "FAKE_KC", Value: "dflt"},
		&IntFlag{Name: "fake-cpu", Usage: "cpus", EnvVar: "FAKE_CPU", Value: 2},
		&BoolFlag{Name: "fake-debug", Usage: "debug", EnvVar: "FAKE_DEBUG"},
		&StringSliceFlag{Name: "fake-list", Usage: "list", EnvVar: "", Value: []string{"a", "b"}},
	})

	// rancher-machine: c.Client.Call(SetConfigFromFlagsMethod, &flags, nil), flags a DriverOptions.
	var opts DriverOptions = &RPCFlags{Values: map[string]interface{}{
		"fake-kc": "KC", "fake-cpu": 4, "fake-debug": true, "fake-list": []string{"x", "y"},
		"swarm-master": false, "engine-install-url": "",
	}}
	must(call("SetConfigFromFlags", &opts, nil))

	var rawOut []byte
	must(call("GetConfigRaw", struct{}{}, &rawOut))
	var config map[string]interface{}
	if err := json.Unmarshal(rawOut, &config); err != nil {
		fail("GetConfigRaw returned invalid JSON %q: %v", rawOut, err)
	}
	expect("GetConfigRaw MachineName", config["MachineName"], "m1")
	expect("GetConfigRaw flag values", config["FlagValues"], map[string]interface{}{
		"fake-kc": "KC", "fake-cpu": float64(4), "fake-debug": true, "fake-list": []interface{}{"x", "y"},
		"swarm-master": false, "engine-install-url": "",
	})

	var st State
	must(call("GetState", struct{}{}, &st))
	expect("GetState", st, State(1))

	var port int
	must(call("GetSSHPort", struct{}{}, &port))
	expect("GetSSHPort", port, 22)

	var ip string
	must(call("GetIP", struct{}{}, &ip))
	expect("GetIP", ip, "10.0.0.7")

	var ipv6 string
	expectError("GetIPv6", call("GetIPv6", struct{}{}, &ipv6), "IPv6 address is not set")
	expectError("Upgrade", call("Upgrade", struct{}{}, nil), "rpc: can't find method RPCServerDriver.Upgrade")
	expectError("unknown service", client.Call("Nope.GetVersion", struct{}{}, nil), "rpc: can't find service Nope.GetVersion")
	expectError("ill-formed", client.Call("NoDot", struct{}{}, nil), "rpc: service/method request ill-formed: NoDot")
	expectPrefix("Kill panic", call("Kill", struct{}{}, nil), "Panic in the driver: TypeError: ")

	// A slow Create, with heartbeats every 100 ms answered meanwhile.
	started := time.Now()
	createDone := make(chan error, 1)
	go func() { createDone <- call("Create", struct{}{}, nil) }()
	beats := 0
	var slowest time.Duration
wait:
	for {
		select {
		case err := <-createDone:
			must(err)
			break wait
		case <-time.After(100 * time.Millisecond):
			t := time.Now()
			must(call("Heartbeat", struct{}{}, nil))
			if d := time.Since(t); d > slowest {
				slowest = d
			}
			beats++
		}
	}
	createTook := time.Since(started)
	if beats < 5 || slowest > 500*time.Millisecond {
		fail("heartbeats during Create: %d answered, slowest %v (Create took %v)", beats, slowest, createTook)
	}
	fmt.Printf("ok heartbeats during Create: %d answered, slowest %v, Create took %v\n", beats, slowest, createTook)

	// Many concurrent calls on the one connection: replies are matched by Seq.
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if i%2 == 0 {
				var s string
				if err := call("GetMachineName", struct{}{}, &s); err != nil || s != "m1" {
					errs <- fmt.Errorf("GetMachineName: %q, %v", s, err)
				}
			} else {
				var v int
				if err := call("GetVersion", struct{}{}, &v); err != nil || v != 1 {
					errs <- fmt.Errorf("GetVersion: %d, %v", v, err)
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		fail("concurrent calls: %v", err)
	}
	fmt.Println("ok 50 concurrent calls")

	// rancher-machine ignores an error from Close; ours must answer before exiting.
	closeErr := call("Close", struct{}{}, nil)
	if closeErr != nil {
		fail("Close: %v", closeErr)
	}
	fmt.Println("ok Close answered")
	select {
	case err := <-p.exited:
		if err != nil {
			fail("plugin exit after Close: %v", err)
		}
		fmt.Println("ok plugin exited with status 0 after Close")
	case <-time.After(5 * time.Second):
		fail("plugin still running 5s after Close")
	}
	fmt.Println("PASS")
}

func must(err error) {
	if err != nil {
		fail("%v", err)
	}
}

func expect(what string, got, want interface{}) {
	if !reflect.DeepEqual(got, want) {
		fail("%s: got %#v, want %#v", what, got, want)
	}
	fmt.Printf("ok %s\n", what)
}

func expectError(what string, err error, want string) {
	if err == nil || err.Error() != want {
		fail("%s: got error %v, want %q", what, err, want)
	}
	if _, ok := err.(rpc.ServerError); !ok {
		fail("%s: got %T, want rpc.ServerError", what, err)
	}
	fmt.Printf("ok %s: %s\n", what, err)
}

func expectPrefix(what string, err error, prefix string) {
	if err == nil || !strings.HasPrefix(err.Error(), prefix) {
		fail("%s: got error %v, want prefix %q", what, err, prefix)
	}
	fmt.Printf("ok %s: %s\n", what, strings.SplitN(err.Error(), "\n", 2)[0])
}
