package chartrepo

import (
	"fmt"
	"os"
	"sort"

	"github.com/Masterminds/semver/v3"
	"sigs.k8s.io/yaml"
)

// IndexFile is the part of a chart repository's index.yaml that gitsync reads. (Helm's
// own repo package would bring its plugin runtime into the binary.)
type IndexFile struct {
	APIVersion string                     `json:"apiVersion"`
	Entries    map[string][]*ChartVersion `json:"entries"`
}

// ChartVersion is one version of a chart in an index.
type ChartVersion struct {
	Name    string   `json:"name"`
	Version string   `json:"version"`
	URLs    []string `json:"urls"`
	// Digest is the sha256 (hex) of the archive, when the index says it.
	Digest string `json:"digest,omitempty"`
	semver *semver.Version
}

// loadIndexFile reads an index and sorts each chart's versions, newest first; entries
// whose version is not semver are left out.
func loadIndexFile(path string) (*IndexFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	idx := &IndexFile{}
	if err := yaml.Unmarshal(data, idx); err != nil {
		return nil, err
	}
	if idx.APIVersion == "" {
		return nil, fmt.Errorf("no apiVersion")
	}
	for name, cvs := range idx.Entries {
		kept := cvs[:0]
		for _, cv := range cvs {
			if cv == nil {
				continue
			}
			v, err := semver.NewVersion(cv.Version)
			if err != nil {
				continue
			}
			cv.semver = v
			if cv.Name == "" {
				cv.Name = name
			}
			kept = append(kept, cv)
		}
		sort.SliceStable(kept, func(i, j int) bool { return kept[i].semver.GreaterThan(kept[j].semver) })
		idx.Entries[name] = kept
	}
	return idx, nil
}

// get returns the highest version of name that versionRange accepts; an empty range
// takes the newest stable version (no pre-release).
func (idx *IndexFile) get(name, versionRange string) (*ChartVersion, bool) {
	constraint, _ := semver.NewConstraint("*")
	if versionRange != "" {
		c, err := semver.NewConstraint(versionRange)
		if err != nil {
			return nil, false
		}
		constraint = c
	}
	for _, cv := range idx.Entries[name] {
		if constraint.Check(cv.semver) {
			return cv, true
		}
	}
	return nil, false
}
