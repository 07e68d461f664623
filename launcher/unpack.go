package main

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/zstd"

	"harvester-machine/launcher/payload"
)

// eachFile decompresses part and calls fn for each regular file in it, in archive order,
// then checks the part's SHA-256 against the index: hashed while it is read, so a payload
// damaged after the build is refused, not unpacked (zstd's frame checksum catches most
// damage too, but not bytes changed consistently). One decoding goroutine, so every
// compressed byte passes the hash in order and none is read twice.
func eachFile(self *os.File, part payload.Part, fn func(name string, mode fs.FileMode, content io.Reader) error) error {
	h := sha256.New()
	in := io.TeeReader(io.NewSectionReader(self, part.Offset, part.Size), h)
	zr, err := zstd.NewReader(in, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return err
	}
	defer zr.Close()
	damaged := func(err error) error {
		return fmt.Errorf("payload part %s is damaged (download it again): %w", part.Name, err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return damaged(err)
		}
		name := path.Clean(h.Name)
		if !safeName(name) {
			return fmt.Errorf("payload part %s holds an unsafe path %q", part.Name, h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			continue
		case tar.TypeReg:
			if err := fn(name, fs.FileMode(h.Mode)&0o555, tr); err != nil {
				return err
			}
		default:
			return fmt.Errorf("payload part %s holds %q, not a regular file", part.Name, h.Name)
		}
	}
	// The rest of the frame (its checksum) and of the part, through the hash.
	if _, err := io.Copy(io.Discard, zr); err != nil {
		return damaged(err)
	}
	if _, err := io.Copy(io.Discard, in); err != nil {
		return damaged(err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != part.SHA256 {
		return damaged(fmt.Errorf("SHA-256 %s, the index says %s", got[:20], part.SHA256[:20]))
	}
	return nil
}

// safeName: a relative path inside the part, and not the completion marker.
func safeName(name string) bool {
	return name != "" && name != "." && !path.IsAbs(name) && name != ".." && !strings.HasPrefix(name, "../") &&
		path.Clean(name) == name && name != markerName
}

// unpackPart unpacks part into a temporary directory under root, writes its completion
// marker last, then renames it to final. Concurrent first runs each unpack their own copy;
// the first rename wins and the others use the winner's (a directory cannot be renamed onto
// a non-empty one). A final directory that failed verifyPart is moved aside first, unless
// another run has just replaced it with a good one.
func unpackPart(self *os.File, part payload.Part, root cacheRoot, final string) error {
	tmp, err := os.MkdirTemp(root.dir, tempPrefix+part.Name+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	var files []partFile
	err = eachFile(self, part, func(name string, mode fs.FileMode, content io.Reader) error {
		target := filepath.Join(tmp, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
		if err != nil {
			return err
		}
		n, err := io.Copy(f, content)
		// Durable before the marker says it is complete.
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		files = append(files, partFile{name: name, size: n, mode: mode})
		return err
	})
	if err != nil {
		return err
	}
	if err := writeMarker(tmp, part, files); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if _, err := os.Lstat(final); err == nil {
		if verifyPart(final, part, root.shared) == nil {
			return nil // another run healed it meanwhile
		}
		aside, err := os.MkdirTemp(root.dir, tempPrefix+part.Name+"-damaged-")
		if err != nil {
			return err
		}
		if err := os.Rename(final, filepath.Join(aside, "part")); err != nil {
			os.Remove(aside)
			return fmt.Errorf("cannot move the damaged %s aside: %w", final, err)
		}
		defer os.RemoveAll(aside)
	}
	if err := os.Rename(tmp, final); err != nil {
		if verifyPart(final, part, root.shared) == nil {
			return nil // another run won the race
		}
		return err
	}
	return nil
}
