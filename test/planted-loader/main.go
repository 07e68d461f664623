// A "loader" another user plants in a shared cache directory, for the launcher's tests: a
// static program that, if it is ever run, leaves a marker file in /tmp and says so. The
// launcher must never run it.
package main

import (
	"fmt"
	"os"
)

func main() {
	_ = os.WriteFile("/tmp/PLANTED-LOADER-RAN", []byte(fmt.Sprintf("uid %d\n", os.Getuid())), 0o644)
	fmt.Println("planted loader ran")
}
