package render

import (
	"fmt"
	"maps"

	"github.com/gitsync-dev/gitsync/internal/apply"
)

// Joined is the render of an Application of several sources (spec.sources): each
// source's render added in the order of the list, joined as the sync applies them. The
// sync, `gitsync diff` and previews all join through it.
type Joined struct {
	Result
	// from maps an inventory ID to the label of the source that rendered it.
	from map[string]string
}

// Add adds res, the render of the source label (e.g. "sources[1] (GitRepository/b)"). An
// object that an earlier source rendered too is an error naming both sources.
func (j *Joined) Add(label string, res *Result) error {
	if j.from == nil {
		j.from = map[string]string{}
	}
	for _, o := range res.Objects {
		id := apply.EntryOf(o).ID
		if other, ok := j.from[id]; ok {
			return fmt.Errorf("%s is rendered by both %s and %s: an object may come from one source only", apply.Subject(o), other, label)
		}
		j.from[id] = label
	}
	j.Objects = append(j.Objects, res.Objects...)
	j.Offline = j.Offline || res.Offline
	j.Encrypted = append(j.Encrypted, res.Encrypted...)
	j.Sensitive = append(j.Sensitive, res.Sensitive...)
	j.joinChart(res.Chart)
	return nil
}

// joinChart keeps the first source's chart name and version, with the crds/ CRDs of
// every chart (create-only when any chart's policy is).
func (j *Joined) joinChart(c Chart) {
	if j.Chart.Name == "" {
		j.Chart.Name, j.Chart.Version = c.Name, c.Version
	}
	if len(c.CRDs) > 0 {
		if j.Chart.CRDs == nil {
			j.Chart.CRDs = map[string]bool{}
		}
		maps.Copy(j.Chart.CRDs, c.CRDs)
		j.Chart.CreateOnly = j.Chart.CreateOnly || c.CreateOnly
	}
}
