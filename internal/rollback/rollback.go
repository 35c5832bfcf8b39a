// Package rollback says which revision of an Application's history a rollback pins: the
// one check the CLI (`gitsync rollback`) and the web UI share.
package rollback

import (
	"errors"
	"fmt"
	"strings"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/source"
)

// ErrRefused wraps every reason a rollback cannot be made (a chart source, a revision
// outside the history, an ambiguous prefix, a suspended Application).
var ErrRefused = errors.New("rollback refused")

// Target is the revision of app's status.history that to names — the whole revision, or
// a commit prefix of at least 7 hex digits matching exactly one revision — for
// spec.pinnedRevision. An Application of a HelmRepository has no commit to pin, one of
// spec.sources has several, and a suspended one would not sync it: all are refused.
func Target(app *gitsyncv1.Application, to string) (string, error) {
	if app.MultiSource() {
		// The controller refuses a pin with spec.sources: one commit cannot pin several sources.
		return "", fmt.Errorf("%w: Application %s/%s has spec.sources: rollback of a multi-source Application is not supported; "+
			"pin each source instead (a GitRepository's spec.ref.commit, an OCIRepository's spec.ref.digest, a chart's helm.version)",
			ErrRefused, app.Namespace, app.Name)
	}
	if app.Spec.SourceRef.Kind == gitsyncv1.HelmRepositoryKind {
		// The controller refuses a pin of a chart: say how to roll a chart back.
		return "", fmt.Errorf("%w: Application %s/%s renders a chart of HelmRepository %s: rollback pins a Git commit; "+
			"pin the chart version instead (spec.helm.version, e.g. the chartVersion of `gitsync history app %s`)",
			ErrRefused, app.Namespace, app.Name, app.Spec.SourceRef.Name, app.Name)
	}
	if app.Spec.SourceRef.Kind == gitsyncv1.OCIRepositoryKind {
		return "", fmt.Errorf("%w: Application %s/%s renders an artifact of OCIRepository %s: rollback pins a Git commit; "+
			"pin the artifact instead (the OCIRepository's spec.ref.digest, from a revision of `gitsync history app %s`)",
			ErrRefused, app.Namespace, app.Name, app.Spec.SourceRef.Name, app.Name)
	}
	to = strings.TrimSpace(to)
	var found []string
	seen := map[string]bool{}
	for _, h := range app.Status.History {
		if seen[h.Revision] {
			continue
		}
		seen[h.Revision] = true
		commit := source.CommitOf(h.Revision)
		if (h.Revision == to && to != "") || (len(to) >= 7 && commit != "" && strings.HasPrefix(commit, strings.ToLower(strings.TrimPrefix(to, "sha1:")))) {
			found = append(found, h.Revision)
		}
	}
	switch {
	case len(found) == 0:
		return "", fmt.Errorf("%w: revision %q is not in the history of Application %s/%s (see gitsync history app %s)", ErrRefused, to, app.Namespace, app.Name, app.Name)
	case len(found) > 1:
		return "", fmt.Errorf("%w: revision %q is ambiguous: %s", ErrRefused, to, strings.Join(found, ", "))
	case app.Spec.Suspend:
		return "", fmt.Errorf("%w: Application %s/%s is suspended: resume it first (gitsync resume app %s -n %s)", ErrRefused, app.Namespace, app.Name, app.Name, app.Namespace)
	}
	return found[0], nil
}
