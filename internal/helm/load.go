// Package helm renders Helm charts in process with the Helm v4 SDK: a chart directory
// confined to a checkout (or a chart archive), values merged in gitsync's order,
// capabilities from the live cluster and `lookup` through the Application's identity.
package helm

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/ignore"
)

// Caps on what a chart may hold, checked before anything is parsed.
const (
	// MaxFileSize is the largest file of a chart directory.
	MaxFileSize = 8 << 20
	// MaxChartSize is the largest chart directory (all its files together).
	MaxChartSize = 32 << 20
)

// IsChart tells whether dir (a directory of a checkout) holds a Chart.yaml.
func IsChart(dir string) bool {
	fi, err := os.Lstat(filepath.Join(dir, chartFile))
	return err == nil && fi.Mode().IsRegular()
}

const chartFile = "Chart.yaml"

// LoadDir loads the chart in dir, which must lie inside root once symlinks are resolved
// (a chart path through a symlink to another directory of the operator's disk is
// refused): every file is read with Lstat-checked paths, a symlink inside the chart is
// refused, .helmignore is honoured, and the caps above bound what is read (vendored
// subcharts decompressed, all together, within Limits.MaxDecompressed).
// Dependencies are not checked (see CheckDependencies).
func LoadDir(root, dir string) (*chart.Chart, error) {
	rootAbs, dirAbs, err := containedDir(root, dir)
	if err != nil {
		return nil, err
	}
	// .helmignore is read before the walk: as every other file, confined, without
	// symlinks and capped (a link to /dev/zero or to a token is refused, not read).
	rules := ignore.Empty()
	data, err := readConfined(dirAbs, ignore.HelmIgnore, MaxFileSize)
	switch {
	case err == nil:
		if rules, err = ignore.Parse(bytes.NewReader(data)); err != nil {
			return nil, fmt.Errorf("loading chart %s: parsing %s: %w", relTo(rootAbs, dirAbs), ignore.HelmIgnore, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("loading chart %s: %w", relTo(rootAbs, dirAbs), err)
	}
	rules.AddDefaults()

	var files []*archive.BufferedFile
	var total int64
	err = filepath.WalkDir(dirAbs, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dirAbs, path)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s is a symlink: charts are read from the checkout only, without symlinks", rel)
		}
		if rules.Ignore(rel, fi) {
			if fi.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if fi.IsDir() {
			return nil
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file", rel)
		}
		if fi.Size() > MaxFileSize {
			return fmt.Errorf("%s has %d bytes, more than the %d a chart file may have", rel, fi.Size(), MaxFileSize)
		}
		if total += fi.Size(); total > MaxChartSize {
			return fmt.Errorf("the chart holds more than %d bytes", MaxChartSize)
		}
		data, err := readConfined(dirAbs, filepath.FromSlash(rel), MaxFileSize)
		if err != nil {
			return err
		}
		files = append(files, &archive.BufferedFile{Name: rel, ModTime: fi.ModTime(), Data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", relTo(rootAbs, dirAbs), err)
	}
	if err := checkVendoredSize(files); err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", relTo(rootAbs, dirAbs), err)
	}
	c, err := loader.LoadFiles(files)
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", relTo(rootAbs, dirAbs), err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("chart %s: %w", relTo(rootAbs, dirAbs), err)
	}
	return c, nil
}

// MissingDependencies are the dependencies of Chart.yaml that charts/ does not hold,
// with the version Chart.lock pins when there is one.
func MissingDependencies(c *chart.Chart) []*chart.Dependency {
	have := map[string]bool{}
	for _, d := range c.Dependencies() {
		have[d.Name()] = true
	}
	locked := map[string]string{}
	if c.Lock != nil {
		for _, d := range c.Lock.Dependencies {
			locked[d.Name] = d.Version
		}
	}
	var missing []*chart.Dependency
	for _, d := range c.Metadata.Dependencies {
		if d == nil || have[d.Name] {
			continue
		}
		dep := *d
		if v, ok := locked[d.Name]; ok && v != "" {
			dep.Version = v
		}
		missing = append(missing, &dep)
	}
	return missing
}

// CheckDependencies requires every dependency of Chart.yaml to be in the chart (vendored
// under charts/, or added from a HelmRepository): gitsync never fetches what a chart names.
func CheckDependencies(c *chart.Chart) error {
	var names []string
	for _, d := range MissingDependencies(c) {
		names = append(names, d.Name)
	}
	if len(names) > 0 {
		return fmt.Errorf("chart %s: dependencies %s are not vendored in charts/ (run `helm dependency build` and commit charts/) and no HelmRepository of the namespace serves them",
			c.Name(), strings.Join(names, ", "))
	}
	return nil
}

// containedDir resolves root and dir (absolute, symlinks evaluated) and refuses a dir
// that is not inside root once resolved. Both are returned resolved.
func containedDir(root, dir string) (string, string, error) {
	rootAbs, err := filepath.Abs(root)
	if err != nil {
		return "", "", err
	}
	dirAbs, err := filepath.Abs(dir)
	if err != nil {
		return "", "", err
	}
	if !within(rootAbs, dirAbs) {
		return "", "", fmt.Errorf("chart %s is outside the checkout", dir)
	}
	realRoot, err := filepath.EvalSymlinks(rootAbs)
	if err != nil {
		return "", "", fmt.Errorf("resolving the checkout: %w", err)
	}
	realDir, err := filepath.EvalSymlinks(dirAbs)
	if err != nil {
		return "", "", fmt.Errorf("chart %s: %w", relTo(rootAbs, dirAbs), errors.Unwrap(err))
	}
	if !within(realRoot, realDir) {
		return "", "", fmt.Errorf("chart %s resolves (through a symlink) to a directory outside the checkout", relTo(rootAbs, dirAbs))
	}
	return realRoot, realDir, nil
}

func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

func relTo(root, path string) string {
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return path
	}
	return rel
}

// ErrNotChart is returned for a directory that holds no Chart.yaml.
var ErrNotChart = errors.New("no Chart.yaml")
