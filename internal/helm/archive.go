package helm

import (
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
)

// LoadArchive loads a chart archive (.tgz) from a chart repository. Helm's archive
// reader refuses entries outside the chart's root (absolute paths, "..") and bounds the
// decompressed size. Dependencies are not checked (see CheckDependencies).
func LoadArchive(file string) (*chart.Chart, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("loading chart archive: %w", err)
	}
	defer f.Close()
	// The whole archive, vendored subcharts included, is measured decompressed before
	// Helm unpacks anything (a small archive can hold a lot).
	l, _, _ := currentLimits()
	left := l.MaxDecompressed
	if err := scanArchive(f, &left, 0, l); err != nil {
		return nil, fmt.Errorf("loading chart archive: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("loading chart archive: %w", err)
	}
	files, err := archive.LoadArchiveFiles(f)
	if err != nil {
		return nil, fmt.Errorf("loading chart archive: %w", err)
	}
	var total int64
	for _, bf := range files {
		if total += int64(len(bf.Data)); total > MaxChartSize {
			return nil, fmt.Errorf("loading chart archive: the chart holds more than %d bytes", MaxChartSize)
		}
	}
	c, err := loader.LoadFiles(files)
	if err != nil {
		return nil, fmt.Errorf("loading chart archive: %w", err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("chart %s: %w", c.Name(), err)
	}
	return c, nil
}

// ChartValuesData returns the bytes of a values file shipped inside a loaded chart (a
// path relative to the chart's root, e.g. values-prod.yaml), unparsed.
func ChartValuesData(c *chart.Chart, name string) ([]byte, error) {
	clean := path.Clean(strings.ReplaceAll(name, "\\", "/"))
	if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
		return nil, fmt.Errorf("values file %s is outside the chart", name)
	}
	for _, f := range c.Raw {
		if f.Name == clean {
			return f.Data, nil
		}
	}
	return nil, fmt.Errorf("values file %s: not in chart %s %s", name, c.Name(), c.Metadata.Version)
}
