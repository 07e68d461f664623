package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"harvester-machine/launcher/payload"
)

// The parts' layout, as scripts/build-executable.sh packs them.
const (
	loaderFile = "lib/ld-linux-x86-64.so.2" // runtime: glibc's dynamic loader
	libDir     = "lib"                      // runtime: the libraries node links, nothing else
	nodeFile   = "node"                     // runtime: the Node executable (stripped)
	bootFile   = "harvester-machine.cjs"    // app: src/bin/bootstrap.ts, Node's main script
	bundleFile = "app.cjs"                  // app: the bundle (src/bin/harvester-machine.ts)
	cacheFile  = "app.cache"                // app: V8's code cache for the bundle
)

// nodeArgv is what the bundled loader runs. Its own argv[0] is ours (so /proc/<pid>/cmdline
// starts with the path we were started by, as for the Go driver); --argv0 hands it on to
// Node (process.argv0), where the dispatcher picks the role from its basename.
// --inhibit-cache keeps the host's /etc/ld.so.cache out: every library comes from the payload.
func nodeArgv(args []string, libs []string, node string, nodeOpts []string, boot, exe, bundle, codeCache, closeFds string) []string {
	argv := []string{args[0], "--argv0", args[0], "--inhibit-cache"}
	argv = append(argv, libs...)
	argv = append(argv, node)
	argv = append(argv, nodeOpts...)
	argv = append(argv, boot, exe, bundle, codeCache, closeFds)
	return append(argv, args[1:]...)
}

// execFromDirs runs Node from unpacked directories; it returns only on failure (e.g. a
// cache on a noexec mount).
func execFromDirs(runtimeDir, appDir, exe string, args []string) error {
	argv := nodeArgv(args, []string{"--library-path", path.Join(runtimeDir, libDir)}, path.Join(runtimeDir, nodeFile), nil,
		path.Join(appDir, bootFile), exe, path.Join(appDir, bundleFile), path.Join(appDir, cacheFile), "")
	return syscall.Exec(path.Join(runtimeDir, loaderFile), argv, syscall.Environ())
}

// execFromMemory is the last resort when no directory is writable: every file goes into
// an anonymous memory file (memfd) and is opened through /proc/self/fd, so it needs /proc.
// The libraries are preloaded by path: ld.so then matches Node's DT_NEEDED entries to them
// by soname. The bootstrap closes the descriptors once Node has read what it needs.
func execFromMemory(self *os.File, parts []payload.Part, exe string, args []string) error {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		return errors.New("no /proc/self/fd to run from memory")
	}
	fds := map[string]int{}
	var libs, order []string
	// Referenced until the exec: an unreferenced *os.File is closed by its finalizer.
	var files []*os.File
	defer func() { runtime.KeepAlive(files) }()
	for _, part := range parts {
		err := eachFile(self, part, func(name string, mode fs.FileMode, content io.Reader) error {
			fd, err := memfd(path.Base(name))
			if err != nil {
				return err
			}
			f := os.NewFile(uintptr(fd), name)
			files = append(files, f)
			if _, err := io.Copy(f, content); err != nil {
				return err
			}
			key := part.Name + "/" + name
			fds[key] = fd
			order = append(order, strconv.Itoa(fd))
			if part.Name == "runtime" && path.Dir(name) == libDir && name != loaderFile {
				libs = append(libs, fdPath(fd))
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	for _, need := range []string{"runtime/" + loaderFile, "runtime/" + nodeFile, "app/" + bootFile, "app/" + bundleFile, "app/" + cacheFile} {
		if _, ok := fds[need]; !ok {
			return fmt.Errorf("payload has no %s", need)
		}
	}
	loader := fdPath(fds["runtime/"+loaderFile])
	argv := nodeArgv(args, []string{"--preload", strings.Join(libs, ":")}, fdPath(fds["runtime/"+nodeFile]),
		// The main script is /proc/self/fd/N: its real path is no file, so Node must keep the link.
		[]string{"--preserve-symlinks-main"},
		fdPath(fds["app/"+bootFile]), exe, fdPath(fds["app/"+bundleFile]), fdPath(fds["app/"+cacheFile]), strings.Join(order, ","))
	return syscall.Exec(loader, argv, syscall.Environ())
}

func fdPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// memfd_create(2) without MFD_CLOEXEC: the descriptor must survive the exec. MFD_EXEC
// (Linux 6.3+) says it will be executed; older kernels reject the flag, so retry without.
func memfd(name string) (int, error) {
	const mfdExec = 0x10
	p, err := syscall.BytePtrFromString(name)
	if err != nil {
		return -1, err
	}
	for _, flags := range []uintptr{mfdExec, 0} {
		fd, _, errno := syscall.Syscall(sysMemfdCreate, uintptr(unsafe.Pointer(p)), flags, 0)
		if errno == 0 {
			return int(fd), nil
		}
		if errno != syscall.EINVAL {
			return -1, fmt.Errorf("memfd_create: %w", errno)
		}
	}
	return -1, errors.New("memfd_create: not supported")
}
