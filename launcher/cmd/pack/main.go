// pack: appends compressed parts and their index to the launcher, making the single
// executable (see ../../payload). Used by scripts/build-executable.sh; with -detach, writes
// the executable without its payload (scripts/build-image.sh: the image holds it unpacked).
//
//	pack -o <output> -launcher <launcher> <name>=<file.tar.zst>...
//	pack -o <output> -detach <executable>
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"harvester-machine/launcher/payload"
)

func main() {
	out := flag.String("o", "", "output executable")
	launcher := flag.String("launcher", "", "the static launcher")
	detach := flag.String("detach", "", "a packed executable to write without its payload")
	flag.Parse()
	if *out != "" && *detach != "" && *launcher == "" && flag.NArg() == 0 {
		fail(detachTo(*out, *detach))
		return
	}
	if *out == "" || *launcher == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: pack -o <output> -launcher <launcher> <name>=<file>... | pack -o <output> -detach <executable>")
		os.Exit(2)
	}
	var names, files []string
	for _, arg := range flag.Args() {
		name, file, ok := strings.Cut(arg, "=")
		if !ok || name == "" || file == "" {
			fmt.Fprintf(os.Stderr, "pack: %q is not <name>=<file>\n", arg)
			os.Exit(2)
		}
		names = append(names, name)
		files = append(files, file)
	}
	f, err := os.OpenFile(*out, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err == nil {
		err = payload.Pack(f, *launcher, names, files)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	fail(err)
}

func detachTo(out, exe string) error {
	in, err := os.Open(exe)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	f, err := os.OpenFile(out, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	err = payload.Detach(f, in, st.Size())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func fail(err error) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "pack: %v\n", err)
		os.Exit(1)
	}
}
