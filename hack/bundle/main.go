// Command bundle regenerates the OLM bundle under bundle/ from config/ (make bundle).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/gitsync-dev/gitsync/internal/bundle"
)

func main() {
	version := flag.String("version", "0.1.0", "the bundle's version (semver, no v)")
	image := flag.String("image", "ghcr.io/gitsync-dev/gitsync:v0.1.0", "the manager's image")
	dir := flag.String("dir", "bundle", "output directory")
	flag.Parse()
	files, err := bundle.Generate(*version, *image)
	if err == nil {
		err = bundle.Write(*dir, files)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bundle:", err)
		os.Exit(1)
	}
}
