// Command chart refreshes charts/gitsync/files from config/ (internal/chart); the chart's
// test fails when they differ. Run from the repository root: go run ./hack/chart
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/gitsync-dev/gitsync/internal/chart"
)

func main() {
	configDir := flag.String("config", "config", "the config/ folder")
	chartDir := flag.String("chart", "charts/gitsync", "the chart to refresh")
	flag.Parse()
	files, err := chart.Generate(os.DirFS(*configDir))
	if err == nil {
		err = chart.Write(*chartDir, files)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "chart:", err)
		os.Exit(1)
	}
	fmt.Printf("%s: %d files from %s\n", *chartDir, len(files), *configDir)
}
