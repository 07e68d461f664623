// pack: appends compressed parts and their index to the launcher, making the single
// executable (see ../../payload). Used by scripts/build-executable.sh.
//
//	pack -o <output> -launcher <launcher> <name>=<file.tar.zst>...
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
	flag.Parse()
	if *out == "" || *launcher == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: pack -o <output> -launcher <launcher> <name>=<file>...")
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
	if err != nil {
		fmt.Fprintf(os.Stderr, "pack: %v\n", err)
		os.Exit(1)
	}
}
