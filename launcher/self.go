package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

type selfFile struct {
	file *os.File
	// Absolute path of the executable: what Node reports as process.execPath, so that
	// re-executing it runs this launcher again.
	path string
}

// openSelf opens the running executable: /proc/self/exe when /proc is mounted, else the
// path it was started by (an empty root has no /proc; whoever exec'd us gave a path,
// or a name found on PATH).
func openSelf(argv0 string) (selfFile, error) {
	if f, err := os.Open("/proc/self/exe"); err == nil {
		if p, err := os.Readlink("/proc/self/exe"); err == nil && filepath.IsAbs(p) && !strings.HasSuffix(p, " (deleted)") {
			return selfFile{f, p}, nil
		}
		if p, err := resolveArgv0(argv0); err == nil {
			return selfFile{f, p}, nil
		}
		return selfFile{f, "/proc/self/exe"}, nil
	}
	p, err := resolveArgv0(argv0)
	if err != nil {
		return selfFile{}, fmt.Errorf("cannot find its own file (no /proc/self/exe, and %v)", err)
	}
	f, err := os.Open(p)
	if err != nil {
		return selfFile{}, fmt.Errorf("cannot read its own file: %w", err)
	}
	return selfFile{f, p}, nil
}

func resolveArgv0(argv0 string) (string, error) {
	if argv0 == "" {
		return "", errors.New("argv[0] is empty")
	}
	if strings.Contains(argv0, "/") {
		return filepath.Abs(argv0)
	}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if dir == "" {
			dir = "."
		}
		candidate := filepath.Join(dir, argv0)
		if st, err := os.Stat(candidate); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return filepath.Abs(candidate)
		}
	}
	return "", fmt.Errorf("%q is not on PATH", argv0)
}
