package selfheal

import (
	"sort"
	"strings"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/drift"
)

func equalDrift(a, b *gitsyncv1.Application) bool {
	if len(a.Status.Drift) != len(b.Status.Drift) {
		return false
	}
	for i := range a.Status.Drift {
		x, y := a.Status.Drift[i], b.Status.Drift[i]
		if x.Object != y.Object || !x.DetectedAt.Equal(&y.DetectedAt) ||
			strings.Join(x.Fields, ",") != strings.Join(y.Fields, ",") ||
			strings.Join(x.Managers, ",") != strings.Join(y.Managers, ",") {
			return false
		}
	}
	as, bs := a.Status.Sync, b.Status.Sync
	ar, br := conditions.Get(a, gitsyncv1.ReadyCondition), conditions.Get(b, gitsyncv1.ReadyCondition)
	return (as == nil) == (bs == nil) && (as == nil || *as == *bs) &&
		(ar == nil) == (br == nil) && (ar == nil || ar.Status == br.Status && ar.Reason == br.Reason && ar.Message == br.Message)
}

func driftEntry(subject string, fields []drift.Field, now time.Time) gitsyncv1.DriftedObject {
	entry := gitsyncv1.DriftedObject{Object: subject, DetectedAt: metav1.NewTime(now)}
	managers := map[string]bool{}
	for _, f := range fields {
		entry.Fields = append(entry.Fields, f.Path)
		for _, m := range f.Managers {
			managers[m] = true
		}
	}
	for m := range managers {
		entry.Managers = append(entry.Managers, m)
	}
	sort.Strings(entry.Managers)
	return entry
}

func findDrift(app *gitsyncv1.Application, subject string) *gitsyncv1.DriftedObject {
	for i := range app.Status.Drift {
		if app.Status.Drift[i].Object == subject {
			return &app.Status.Drift[i]
		}
	}
	return nil
}

func setDrift(app *gitsyncv1.Application, entry gitsyncv1.DriftedObject) {
	if existing := findDrift(app, entry.Object); existing != nil {
		*existing = entry
		return
	}
	app.Status.Drift = append(app.Status.Drift, entry)
	sort.Slice(app.Status.Drift, func(i, j int) bool { return app.Status.Drift[i].Object < app.Status.Drift[j].Object })
}

func removeDrift(app *gitsyncv1.Application, subject string) {
	out := app.Status.Drift[:0:0]
	for _, d := range app.Status.Drift {
		if d.Object != subject {
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		out = nil
	}
	app.Status.Drift = out
}

func managersText(managers []string) string {
	if len(managers) == 0 {
		return "unknown manager"
	}
	return strings.Join(managers, ", ")
}
