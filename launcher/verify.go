package main

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"harvester-machine/launcher/payload"
)

// A part directory is trusted only with its completion marker, written last by the unpack
// that made it (after every file was written and synced and the part's hash was checked):
// it names the part's hash and every file with its size and mode. The warm path reads it and
// lstats each file, so a directory that is half there, or lost a file to a temp reaper, is
// unpacked again instead of being run. Twenty-odd syscalls; the payload is never re-read.
const markerName = ".harvester-machine-part"

const markerHeader = "harvester-machine part 1"

// partFile is one file of an unpacked part, as the marker lists it.
type partFile struct {
	name string
	size int64
	mode fs.FileMode
}

// writeMarker writes the marker into dir (the unpack's temporary directory) and syncs it.
func writeMarker(dir string, part payload.Part, files []partFile) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\nsha256 %s\n", markerHeader, part.SHA256)
	for _, f := range files {
		fmt.Fprintf(&b, "%d %o %s\n", f.size, f.mode, f.name)
	}
	m, err := os.OpenFile(filepath.Join(dir, markerName), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o444)
	if err != nil {
		return err
	}
	_, err = m.WriteString(b.String())
	if err == nil {
		err = m.Sync()
	}
	if cerr := m.Close(); err == nil {
		err = cerr
	}
	return err
}

// verifyPart says why dir cannot be run as part, or nil. In a shared root the directory must
// also be ours alone (another user could otherwise have made or changed it).
func verifyPart(dir string, part payload.Part, shared bool) error {
	st, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if err := ownDirectory(st, shared); err != nil {
		return err
	}
	m, err := os.OpenFile(filepath.Join(dir, markerName), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("not completely unpacked (%w)", err)
	}
	defer m.Close()
	lines := bufio.NewScanner(m)
	if !lines.Scan() || lines.Text() != markerHeader || !lines.Scan() || lines.Text() != "sha256 "+part.SHA256 {
		return errors.New("its completion marker is not this part's")
	}
	n := 0
	for lines.Scan() {
		f, err := parseMarkerLine(lines.Text())
		if err != nil {
			return err
		}
		fst, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(f.name)))
		if err != nil {
			return fmt.Errorf("%s is missing (%w)", f.name, err)
		}
		if !fst.Mode().IsRegular() || fst.Size() != f.size || fst.Mode().Perm() != f.mode {
			return fmt.Errorf("%s is not the file that was unpacked", f.name)
		}
		n++
	}
	if lines.Err() != nil || n == 0 {
		return errors.New("its completion marker is damaged")
	}
	return nil
}

func parseMarkerLine(line string) (partFile, error) {
	size, rest, ok1 := strings.Cut(line, " ")
	mode, name, ok2 := strings.Cut(rest, " ")
	s, err1 := strconv.ParseInt(size, 10, 64)
	m, err2 := strconv.ParseUint(mode, 8, 32)
	if !ok1 || !ok2 || err1 != nil || err2 != nil || !safeName(name) {
		return partFile{}, errors.New("its completion marker is damaged")
	}
	return partFile{name: name, size: s, mode: fs.FileMode(m)}, nil
}

// ownDirectory: a real directory (not a link to one), and in a shared place ours alone.
func ownDirectory(st fs.FileInfo, shared bool) error {
	if !st.IsDir() {
		return errors.New("exists and is not a directory")
	}
	if !shared {
		return nil
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	switch {
	case !ok || int(sys.Uid) != os.Geteuid():
		return errors.New("is owned by another user")
	case st.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("has mode %o: others may write it", st.Mode().Perm())
	}
	return nil
}

// checkSharedRoot checks, on every start, what a shared root stands on: the place it is in
// (a directory that others may write only if it is sticky, as /tmp is, so nobody can
// rename our directory away and put theirs in its place) and the root itself (ours alone).
func checkSharedRoot(root cacheRoot) error {
	base, err := os.Stat(root.base)
	if err != nil || !base.IsDir() {
		return fmt.Errorf("%s is not a directory", root.base)
	}
	if base.Mode().Perm()&0o022 != 0 && base.Mode()&fs.ModeSticky == 0 {
		return fmt.Errorf("%s may be written by others and is not sticky", root.base)
	}
	st, err := os.Lstat(root.dir)
	if err != nil {
		return err
	}
	return ownDirectory(st, true)
}
