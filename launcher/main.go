// The harvester-machine launcher: a static executable (no loader, no libc needed) that
// carries Node, exactly the shared libraries Node links (its own ld.so included) and the
// bundled application, compressed, after its own ELF image (see payload/). It unpacks them
// once per content hash into a cache directory and execs Node through the bundled loader,
// so the executable runs in an empty root filesystem, as the Go driver does.
// docs/decisions/0007-static-launcher.md says why it works this way.
package main

import (
	"fmt"
	"os"
	"strings"

	"harvester-machine/launcher/payload"
)

// Exit status when Node could not be started at all (126: found but cannot be executed).
const exitCannotStart = 126

func main() {
	if err := launch(os.Args); err != nil {
		fmt.Fprintf(os.Stderr, "harvester-machine: %v\n", err)
		os.Exit(exitCannotStart)
	}
}

// launch only returns when every way to start Node failed.
func launch(args []string) error {
	self, err := openSelf(args[0])
	if err != nil {
		return err
	}
	defer self.file.Close()
	st, err := self.file.Stat()
	if err != nil {
		return fmt.Errorf("reading %s: %w", self.path, err)
	}
	index, err := payload.ReadIndex(self.file, st.Size())
	if err != nil {
		return fmt.Errorf("%s: %w", self.path, err)
	}
	runtime, err := index.Find("runtime")
	if err != nil {
		return err
	}
	app, err := index.Find("app")
	if err != nil {
		return err
	}
	parts := []payload.Part{runtime, app}
	if index.Detached() {
		return launchDetached(parts, self.path, args)
	}

	var failures []string
	for _, root := range cacheRoots() {
		dirs, err := unpackedIn(root, self.file, parts)
		if err == nil {
			err = execFromDirs(dirs[0], dirs[1], self.path, args)
		}
		failures = append(failures, fmt.Sprintf("%s: %v", root.dir, err))
	}
	err = execFromMemory(self.file, parts, self.path, args)
	failures = append(failures, fmt.Sprintf("in memory: %v", err))
	return fmt.Errorf("cannot start the bundled Node runtime; tried:\n  %s", strings.Join(failures, "\n  "))
}

// launchDetached runs an executable without its payload (the controller image's): only from
// part directories already there and verified as a warm start verifies them (completion
// marker of the same hash, every file as unpacked). It writes nothing: a missing or damaged
// part is an error, as there is nothing to unpack it from. Shared roots (/tmp) are not looked
// at: what it runs was put there by whoever built the image, not found lying about.
func launchDetached(parts []payload.Part, exe string, args []string) error {
	var failures []string
	for _, root := range cacheRoots() {
		if root.shared {
			continue
		}
		dirs, err := verifiedIn(root, parts)
		if err == nil {
			err = execFromDirs(dirs[0], dirs[1], exe, args)
		}
		failures = append(failures, fmt.Sprintf("%s: %v", root.dir, err))
	}
	return fmt.Errorf("this executable carries no payload (the controller image's) and found no unpacked, verified runtime; tried:\n  %s", strings.Join(failures, "\n  "))
}
