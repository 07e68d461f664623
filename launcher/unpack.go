package main

import (
	"archive/tar"
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

// eachFile decompresses part and calls fn for each regular file in it, in archive order.
// zstd's frame checksum (on by default when packing) catches a damaged payload.
func eachFile(self *os.File, part payload.Part, fn func(name string, mode fs.FileMode, content io.Reader) error) error {
	zr, err := zstd.NewReader(io.NewSectionReader(self, part.Offset, part.Size))
	if err != nil {
		return err
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("payload part %s is damaged (download it again): %w", part.Name, err)
		}
		name := path.Clean(h.Name)
		if path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
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
}

// unpackPart unpacks part into a temporary directory under root, then renames it to
// final. Concurrent first runs each unpack their own copy; the first rename wins and the
// others use the winner's (a directory cannot be renamed onto a non-empty one).
func unpackPart(self *os.File, part payload.Part, root, final string) error {
	tmp, err := os.MkdirTemp(root, tempPrefix+part.Name+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	err = eachFile(self, part, func(name string, mode fs.FileMode, content io.Reader) error {
		target := filepath.Join(tmp, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, content)
		// Durable before the rename publishes it: a crash must not leave a complete-looking
		// directory of empty files that every later run would trust.
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	})
	if err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if err := os.Rename(tmp, final); err != nil {
		if st, serr := os.Stat(final); serr == nil && st.IsDir() {
			return nil // another run won the race
		}
		return err
	}
	return nil
}
