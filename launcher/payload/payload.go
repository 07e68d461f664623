// Package payload is the layout of harvester-machine's single executable: the static
// launcher, then the compressed parts it unpacks, then an index and a fixed trailer at the
// very end of the file (so the launcher finds them without knowing its own size in
// advance, and the ELF before them runs unchanged):
//
//	launcher ELF | part 0 | part 1 | ... | index (JSON) | index length (uint64 LE) | Magic
//
// Each part is a zstd-compressed tar; its content hash names the directory it is unpacked
// into, so a changed part never reuses a stale directory.
//
// A detached executable (the controller image's: scripts/build-image.sh) is the same launcher
// and index with every part marked detached and its bytes left out: it runs the parts only
// from directories already unpacked and verified (their completion markers name the same
// hashes), and never unpacks, so an image holds the payload once, unpacked.
package payload

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Magic ends every packed executable; a launcher without a payload does not end with it.
const Magic = "HMPAYLD1"

const trailerSize = 8 + len(Magic)

// Largest index accepted: it lists a handful of parts.
const maxIndexSize = 64 << 10

// Part is one compressed tar in the file.
type Part struct {
	// Name says what the part holds ("runtime", "app"); it prefixes its directory.
	Name string `json:"name"`
	// Offset from the start of the file, and length, of the compressed bytes.
	Offset int64 `json:"offset"`
	Size   int64 `json:"size"`
	// SHA256 of the compressed bytes, hex.
	SHA256 string `json:"sha256"`
	// Detached: the bytes are not in this file (Offset and Size are those of the executable it
	// was detached from); only an unpacked directory of this hash can run it.
	Detached bool `json:"detached,omitempty"`
}

// Index lists the parts. Format changes only when the launcher must read it differently.
type Index struct {
	Format int    `json:"format"`
	Parts  []Part `json:"parts"`
}

// FormatVersion is what this launcher reads and the packer writes.
const FormatVersion = 1

// DirName is where a part is unpacked under the cache root: name and 20 hex digits of its hash.
func (p Part) DirName() string {
	return p.Name + "-" + p.SHA256[:20]
}

// Find returns the part with that name.
func (ix *Index) Find(name string) (Part, error) {
	for _, p := range ix.Parts {
		if p.Name == name {
			return p, nil
		}
	}
	return Part{}, fmt.Errorf("the executable's payload has no %q part", name)
}

// ErrNoPayload: the file ends without Magic (a bare launcher, or a truncated download).
var ErrNoPayload = errors.New("no payload at the end of the executable (truncated download?)")

// ReadIndex reads the index from the end of f, whose size is size.
func ReadIndex(f io.ReaderAt, size int64) (*Index, error) {
	if size < int64(trailerSize) {
		return nil, ErrNoPayload
	}
	trailer := make([]byte, trailerSize)
	if _, err := f.ReadAt(trailer, size-int64(trailerSize)); err != nil {
		return nil, fmt.Errorf("reading the payload trailer: %w", err)
	}
	if string(trailer[8:]) != Magic {
		return nil, ErrNoPayload
	}
	n := binary.LittleEndian.Uint64(trailer[:8])
	if n == 0 || n > maxIndexSize || int64(n) > size-int64(trailerSize) {
		return nil, fmt.Errorf("payload index length %d is out of range", n)
	}
	raw := make([]byte, n)
	if _, err := f.ReadAt(raw, size-int64(trailerSize)-int64(n)); err != nil {
		return nil, fmt.Errorf("reading the payload index: %w", err)
	}
	var ix Index
	if err := json.Unmarshal(raw, &ix); err != nil {
		return nil, fmt.Errorf("payload index: %w", err)
	}
	if ix.Format != FormatVersion {
		return nil, fmt.Errorf("payload format %d, this launcher reads %d", ix.Format, FormatVersion)
	}
	end := size - int64(trailerSize) - int64(n)
	for _, p := range ix.Parts {
		inFile := p.Detached || (p.Offset >= 0 && p.Size > 0 && p.Offset+p.Size <= end)
		if p.Name == "" || len(p.SHA256) != 64 || !inFile {
			return nil, fmt.Errorf("payload part %q is malformed", p.Name)
		}
	}
	return &ix, nil
}

// Detached says whether any part's bytes are left out of the file.
func (ix *Index) Detached() bool {
	for _, p := range ix.Parts {
		if p.Detached {
			return true
		}
	}
	return false
}

// Detach writes to out the launcher of the packed executable in (the bytes before its first
// part) and its index with every part marked detached: the executable without its payload.
func Detach(out io.Writer, in io.ReaderAt, size int64) error {
	ix, err := ReadIndex(in, size)
	if err != nil {
		return err
	}
	if ix.Detached() {
		return errors.New("the executable is detached already")
	}
	start := size
	for i := range ix.Parts {
		start = min(start, ix.Parts[i].Offset)
		ix.Parts[i].Detached = true
	}
	if _, err := io.Copy(out, io.NewSectionReader(in, 0, start)); err != nil {
		return err
	}
	return writeIndex(out, ix)
}

func writeIndex(out io.Writer, ix *Index) error {
	raw, err := json.Marshal(ix)
	if err != nil {
		return err
	}
	trailer := binary.LittleEndian.AppendUint64(nil, uint64(len(raw)))
	trailer = append(trailer, Magic...)
	_, err = out.Write(append(raw, trailer...))
	return err
}

// Pack writes launcher, then each part file, then the index and trailer, to out.
// Part names come from names, in the same order as files.
func Pack(out io.Writer, launcher string, names, files []string) error {
	var offset int64
	copyFile := func(path string, h io.Writer) (int64, error) {
		f, err := os.Open(path)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		w := io.Writer(out)
		if h != nil {
			w = io.MultiWriter(out, h)
		}
		return io.Copy(w, f)
	}
	n, err := copyFile(launcher, nil)
	if err != nil {
		return fmt.Errorf("launcher %s: %w", launcher, err)
	}
	offset += n
	ix := Index{Format: FormatVersion}
	for i, path := range files {
		h := sha256.New()
		n, err := copyFile(path, h)
		if err != nil {
			return fmt.Errorf("part %s: %w", path, err)
		}
		ix.Parts = append(ix.Parts, Part{Name: names[i], Offset: offset, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))})
		offset += n
	}
	return writeIndex(out, &ix)
}
