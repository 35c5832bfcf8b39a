package ui

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/operations"
)

// parseResources reads the objects a selective sync names with the parser of the CLI's
// --resource (gitsyncv1.ParseResourceSelector), at most gitsyncv1.MaxSyncResources.
func parseResources(resources []string) ([]gitsyncv1.ResourceSelector, error) {
	if len(resources) > gitsyncv1.MaxSyncResources {
		return nil, fmt.Errorf("a selective sync names at most %d objects, not %d: %w", gitsyncv1.MaxSyncResources, len(resources), errBadRequest)
	}
	out := make([]gitsyncv1.ResourceSelector, 0, len(resources))
	for _, r := range resources {
		sel, err := gitsyncv1.ParseResourceSelector(r)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", err, errBadRequest)
		}
		out = append(out, sel)
	}
	return out, nil
}

// checkRendered refuses a selector that names no object of the Application's render now
// (the source's current or pinned revision), which is what a selective sync applies
// from: the Differ's compare (the preview's) of the selected objects only. Without a
// Differ there is nothing to render with, and the controller's answer says it instead
// (Ready=False: the selector matches no object of the revision).
func (s *Server) checkRendered(ctx context.Context, app *gitsyncv1.Application, sels []gitsyncv1.ResourceSelector) error {
	if s.opts.Diff == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	// The Differ names objects Kind/namespace/name: the group is read from the manifest.
	named := func(subject string) bool {
		kind, ns, name := splitID(subject)
		for _, sel := range sels {
			if (sel.Kind == kind) && (sel.Namespace == "" || sel.Namespace == ns) && sel.Name == name {
				return true
			}
		}
		return false
	}
	diffs, err := s.opts.Diff(ctx, s.cfg, s.direct, app, named)
	if err != nil {
		return fmt.Errorf("checking the objects against the render of %s/%s: %w", app.Namespace, app.Name, err)
	}
	var missing []string
	for _, sel := range sels {
		found := false
		for _, d := range diffs {
			kind, ns, name := splitID(d.Subject)
			if d.Action != operations.PrunedAction && sel.Matches(groupOf(d.Git), kind, ns, name) {
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, sel.String())
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s: not an object of Application %s/%s (its render from the source holds no such object), nothing was requested: %w",
			strings.Join(missing, ", "), app.Namespace, app.Name, errBadRequest)
	}
	return nil
}

// groupOf is the API group of a manifest (its apiVersion's), "" for the core group.
func groupOf(manifest string) string {
	var m struct {
		APIVersion string `json:"apiVersion"`
	}
	if err := yaml.Unmarshal([]byte(manifest), &m); err != nil {
		return ""
	}
	gv, _ := schema.ParseGroupVersion(m.APIVersion)
	return gv.Group
}

// selectiveResult says what a selective sync request asked for.
func selectiveResult(resources []string) string {
	return "sync of " + strings.Join(resources, ", ") + " requested (selective: no prune)"
}
