package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"harvester-machine/launcher/payload"
)

// cacheRoot is a directory that holds unpacked parts, one directory per part and hash.
type cacheRoot struct {
	dir string
	// base must already exist: a missing $HOME is not created (as root, it could be).
	base string
	// shared: under a directory other users can write (/tmp), so it must be ours alone.
	shared bool
}

const (
	// A part directory unused for this long is removed when another one is unpacked.
	pruneAfter = 30 * 24 * time.Hour
	// Its mtime is refreshed on use at most this often (one utimes call, rarely).
	touchEvery = 24 * time.Hour
	// An unpack that has not finished in this long died: its temporary directory goes.
	staleTemp  = time.Hour
	tempPrefix = ".tmp-"
)

// cacheRoots: $XDG_CACHE_HOME, ~/.cache, then $TMPDIR and /tmp (a directory per user).
func cacheRoots() []cacheRoot {
	var roots []cacheRoot
	if x := os.Getenv("XDG_CACHE_HOME"); filepath.IsAbs(x) {
		roots = append(roots, cacheRoot{dir: filepath.Join(x, "harvester-machine", "unpacked"), base: x})
	}
	if h := os.Getenv("HOME"); filepath.IsAbs(h) {
		roots = append(roots, cacheRoot{dir: filepath.Join(h, ".cache", "harvester-machine", "unpacked"), base: h})
	}
	user := fmt.Sprintf("harvester-machine-%d", os.Geteuid())
	seen := map[string]bool{}
	for _, t := range []string{os.Getenv("TMPDIR"), "/tmp"} {
		if !filepath.IsAbs(t) || seen[filepath.Clean(t)] {
			continue
		}
		seen[filepath.Clean(t)] = true
		roots = append(roots, cacheRoot{dir: filepath.Join(t, user), base: t, shared: true})
	}
	return roots
}

// unpackedIn returns the parts' directories under root, unpacking those missing or failing
// verifyPart. A shared root is checked on every start, before anything in it is trusted.
func unpackedIn(root cacheRoot, self *os.File, parts []payload.Part) ([]string, error) {
	if root.shared {
		if err := checkSharedRoot(root); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	dirs := make([]string, len(parts))
	var missing []int
	for i, p := range parts {
		dirs[i] = filepath.Join(root.dir, p.DirName())
		st, err := os.Lstat(dirs[i])
		if err == nil {
			err = verifyPart(dirs[i], p, root.shared)
		}
		if err != nil {
			missing = append(missing, i)
			continue
		}
		if time.Since(st.ModTime()) > touchEvery {
			now := time.Now()
			_ = os.Chtimes(dirs[i], now, now)
		}
	}
	if len(missing) == 0 {
		return dirs, nil
	}
	if err := prepareRoot(root); err != nil {
		return nil, err
	}
	errs := make([]error, len(missing))
	var wg sync.WaitGroup
	for j, i := range missing {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[j] = unpackPart(self, parts[i], root, dirs[i])
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	prune(root.dir, parts)
	return dirs, nil
}

// verifiedIn returns the parts' directories under root when every one is there and passes
// verifyPart, without writing anything (a detached executable cannot unpack).
func verifiedIn(root cacheRoot, parts []payload.Part) ([]string, error) {
	dirs := make([]string, len(parts))
	for i, p := range parts {
		dirs[i] = filepath.Join(root.dir, p.DirName())
		if err := verifyPart(dirs[i], p, root.shared); err != nil {
			return nil, fmt.Errorf("%s: %w", p.DirName(), err)
		}
	}
	return dirs, nil
}

// prepareRoot creates the root; a shared one must be a real directory of ours that nobody
// else may write, or another user could put their own "Node" in it.
func prepareRoot(root cacheRoot) error {
	if st, err := os.Stat(root.base); err != nil || !st.IsDir() {
		return fmt.Errorf("%s is not a directory", root.base)
	}
	if !root.shared {
		return os.MkdirAll(root.dir, 0o700)
	}
	if err := os.Mkdir(root.dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return checkSharedRoot(root)
}

// prune removes part directories of other versions unused for pruneAfter, and temporary
// directories of unpacks that died. Errors are ignored: it is housekeeping.
func prune(dir string, keep []payload.Part) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	current := map[string]bool{}
	names := map[string]bool{}
	for _, p := range keep {
		current[p.DirName()] = true
		names[p.Name] = true
	}
	for _, e := range entries {
		name := e.Name()
		info, err := e.Info()
		if err != nil || !e.IsDir() || current[name] {
			continue
		}
		age := time.Since(info.ModTime())
		kind, _, _ := strings.Cut(strings.TrimPrefix(name, tempPrefix), "-")
		if !names[kind] {
			continue
		}
		if (strings.HasPrefix(name, tempPrefix) && age > staleTemp) || (!strings.HasPrefix(name, tempPrefix) && age > pruneAfter) {
			_ = os.RemoveAll(filepath.Join(dir, name))
		}
	}
}
