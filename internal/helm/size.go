package helm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
)

// maxSubchartDepth bounds how deep vendored charts may nest (charts/a.tgz holding
// charts/b.tgz …).
const maxSubchartDepth = 8

// ErrChartTooLarge is a chart whose decompressed content, vendored subcharts included,
// exceeds Limits.MaxDecompressed.
var ErrChartTooLarge = errors.New("chart too large")

// checkVendoredSize decompresses, without keeping anything, every vendored subchart
// archive (charts/*.tgz, recursively) of files, and fails once the chart's files and all
// of those together exceed Limits.MaxDecompressed. Helm's loader would unpack each of
// them up to its own per-archive cap of 100 MiB.
func checkVendoredSize(files []*archive.BufferedFile) error {
	l, _, _ := currentLimits()
	left := l.MaxDecompressed
	for _, f := range files {
		if left -= int64(len(f.Data)); left < 0 {
			return tooLarge(l)
		}
	}
	for _, f := range files {
		if isVendored(f.Name) {
			if err := scanArchive(bytes.NewReader(f.Data), &left, 1, l); err != nil {
				return fmt.Errorf("%s: %w", f.Name, err)
			}
		}
	}
	return nil
}

// isVendored tells whether name (relative to a chart's root) is a subchart archive.
func isVendored(name string) bool {
	return strings.HasSuffix(name, ".tgz") && path.Base(path.Dir(name)) == "charts"
}

// scanArchive reads a chart archive through, charging its decompressed size to left, and
// recurses into the subchart archives it holds.
func scanArchive(r io.Reader, left *int64, depth int, l Limits) error {
	if depth > maxSubchartDepth {
		return fmt.Errorf("subcharts nest deeper than %d levels", maxSubchartDepth)
	}
	gz, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("not a gzip archive: %w", err)
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the archive: %w", err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		// Inside an archive, names start with the chart's directory: x/charts/y.tgz.
		name := h.Name
		if i := strings.Index(name, "/"); i >= 0 {
			name = name[i+1:]
		}
		if isVendored(name) {
			var buf bytes.Buffer
			n, err := io.Copy(&buf, io.LimitReader(tr, *left+1))
			if *left -= n; err != nil || *left < 0 {
				return tooLarge(l)
			}
			if err := scanArchive(&buf, left, depth+1, l); err != nil {
				return fmt.Errorf("%s: %w", h.Name, err)
			}
			continue
		}
		n, err := io.Copy(io.Discard, io.LimitReader(tr, *left+1))
		if *left -= n; err != nil || *left < 0 {
			return tooLarge(l)
		}
	}
}

func tooLarge(l Limits) error {
	return fmt.Errorf("%w: more than %d bytes decompressed, vendored subcharts included", ErrChartTooLarge, l.MaxDecompressed)
}
