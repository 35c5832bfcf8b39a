package operations

import (
	"context"
	"fmt"
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/sourceid"
)

// Explanation says why an Application is not Ready, Synced or Healthy.
type Explanation struct {
	Application string `json:"application"`
	Ready       string `json:"ready"`
	Sync        string `json:"sync"`
	Health      string `json:"health"`
	// OK is true when nothing holds the Application back: Ready, Synced, Healthy,
	// not suspended or pinned, no drift, nothing pending.
	OK bool `json:"ok"`
	// Reasons are the findings, most fundamental first, each one sentence.
	Reasons      []string                  `json:"reasons"`
	Conditions   []metav1.Condition        `json:"conditions,omitempty"`
	Hooks        []gitsyncv1.HookStatus    `json:"hooks,omitempty"`
	Drift        []gitsyncv1.DriftedObject `json:"drift,omitempty"`
	Dependencies []Status                  `json:"dependencies,omitempty"`
	// Source is the state of the source of spec.sourceRef; Sources, with spec.sources,
	// of each source (once per source object), in their order.
	Source  *Status  `json:"source,omitempty"`
	Sources []Status `json:"sources,omitempty"`
}

// Explain reads app's status and spec, the states of its dependsOn Applications (deps)
// and of its sources (srcs, SourceStates; none when unknown) and says what holds it back.
func Explain(app *gitsyncv1.Application, deps []Status, srcs []Status) Explanation {
	st := StatusOf(app)
	e := Explanation{Application: app.Namespace + "/" + app.Name, Ready: st.Ready, Sync: orUnknown(st.Sync),
		Health: orUnknown(st.Health), Conditions: app.Status.Conditions, Hooks: app.Status.Hooks,
		Drift: app.Status.Drift, Dependencies: deps}
	if app.MultiSource() {
		e.Sources = srcs
	} else if len(srcs) > 0 {
		e.Source = &srcs[0]
	}
	add := func(format string, args ...any) { e.Reasons = append(e.Reasons, fmt.Sprintf(format, args...)) }
	conds := app.Status.Conditions

	if app.Status.ObservedGeneration < app.Generation {
		add("the controller has not handled the latest spec yet (generation %d, observed %d)", app.Generation, app.Status.ObservedGeneration)
	}
	if app.Spec.Suspend {
		add("suspended (spec.suspend): nothing is synced or corrected until it is resumed")
	}
	if app.Spec.PinnedRevision != "" {
		add("pinned to %s by a rollback: newer commits are not applied until it is resumed", app.Spec.PinnedRevision)
	}
	if c := apimeta.FindStatusCondition(conds, gitsyncv1.StalledCondition); c != nil && c.Status == metav1.ConditionTrue {
		add("stalled (%s): %s; it will not progress until its spec or source changes", c.Reason, oneLine(c.Message))
	}
	if c := apimeta.FindStatusCondition(conds, gitsyncv1.ReadyCondition); c != nil && c.Status != metav1.ConditionTrue {
		add("Ready=%s (%s): %s", c.Status, c.Reason, oneLine(c.Message))
	} else if c == nil && !app.Spec.Suspend {
		add("no Ready condition yet: the controller has not reconciled it")
	}
	if c := apimeta.FindStatusCondition(conds, gitsyncv1.ReconcilingCondition); c != nil && c.Status == metav1.ConditionTrue {
		add("a sync is in progress (%s): %s", c.Reason, oneLine(c.Message))
	}
	for _, h := range app.Status.Hooks {
		switch h.Result {
		case "Failed":
			add("hook %s (%s, revision %s) failed: %s", hookName(h), h.Phase, h.Revision, oneLine(h.Message))
		case "Running":
			add("hook %s (%s, revision %s) is still running", hookName(h), h.Phase, h.Revision)
		}
	}
	for _, d := range deps {
		switch {
		case d.Error != "":
			add("dependsOn %s/%s cannot be read: %s", d.Namespace, d.Name, d.Error)
		case d.Ready != string(metav1.ConditionTrue):
			add("dependsOn %s/%s is not Ready (%s): %s", d.Namespace, d.Name, orUnknown(d.Reason), oneLine(d.Message))
		}
	}
	for _, src := range srcs {
		name := fmt.Sprintf("%s %s/%s", src.Kind, src.Namespace, src.Name)
		switch {
		case src.Error != "":
			add("source %s cannot be read: %s", name, src.Error)
		case src.Suspended:
			add("source %s is suspended: new revisions are not fetched", name)
		case src.Ready != string(metav1.ConditionTrue):
			add("source %s is not Ready (%s): %s", name, orUnknown(src.Reason), oneLine(src.Message))
		}
	}
	if s := app.Status.Sync; s != nil && s.Status != gitsyncv1.SyncStatusSynced {
		if app.Spec.AutoSync != nil && !*app.Spec.AutoSync {
			add("%s: autoSync is off, so revision %s waits for a sync request (reconcile)", s.Status, orUnknown(s.Revision))
		} else {
			add("%s: the cluster is not at revision %s (last applied %s)", s.Status, orUnknown(s.Revision), orUnknown(app.Status.LastAppliedRevision))
		}
	}
	selfHeal := app.Spec.SelfHeal == nil || *app.Spec.SelfHeal
	for _, d := range app.Status.Drift {
		msg := fmt.Sprintf("%s drifted from Git in %s, written by %s", d.Object, listOr(d.Fields, "unknown fields"), listOr(d.Managers, "an unknown field manager"))
		if !selfHeal {
			msg += "; selfHeal is off, so it is reported, not corrected"
		}
		add("%s", msg)
	}
	if h := app.Status.Health; h != nil && h.Status != gitsyncv1.HealthStatusHealthy {
		add("health %s: %s", h.Status, orUnknown(oneLine(h.Message)))
	}
	e.OK = len(e.Reasons) == 0
	if e.OK {
		add("Ready, Synced and Healthy at revision %s: nothing holds it back", orUnknown(app.Status.LastAppliedRevision))
	}
	return e
}

// ExplainApp is Explain of app with the states of its dependencies and source read
// through c.
func ExplainApp(ctx context.Context, c client.Reader, app *gitsyncv1.Application) Explanation {
	return Explain(app, Dependencies(ctx, c, app), SourceStates(ctx, c, app))
}

// Dependencies reads the states of app's dependsOn Applications.
func Dependencies(ctx context.Context, c client.Reader, app *gitsyncv1.Application) []Status {
	var out []Status
	for _, d := range app.Spec.DependsOn {
		key := client.ObjectKey{Namespace: d.Namespace, Name: d.Name}
		if key.Namespace == "" {
			key.Namespace = app.Namespace
		}
		dep := &gitsyncv1.Application{}
		if err := c.Get(ctx, key, dep); err != nil {
			out = append(out, Status{Kind: gitsyncv1.ApplicationKind, Namespace: key.Namespace, Name: key.Name, Error: err.Error()})
			continue
		}
		out = append(out, StatusOf(dep))
	}
	return out
}

// SourceStates reads the state of each of app's sources (spec.sourceRef, or every
// source of spec.sources, a source object listed twice read once), in their order.
func SourceStates(ctx context.Context, c client.Reader, app *gitsyncv1.Application) []Status {
	var out []Status
	seen := map[string]bool{}
	for i := range app.SourceList() {
		view := app.ForSource(i)
		kind, key := view.Spec.SourceRef.Kind, sourceid.Key(view)
		if kind == "" {
			kind = gitsyncv1.GitRepositoryKind
		}
		id := kind + "/" + key.String()
		if seen[id] {
			continue
		}
		seen[id] = true
		var obj client.Object
		switch kind {
		case gitsyncv1.HelmRepositoryKind:
			obj = &gitsyncv1.HelmRepository{}
		case gitsyncv1.OCIRepositoryKind:
			obj = &gitsyncv1.OCIRepository{}
		default:
			obj = &gitsyncv1.GitRepository{}
		}
		if err := c.Get(ctx, key, obj); err != nil {
			out = append(out, Status{Kind: kind, Namespace: key.Namespace, Name: key.Name, Error: err.Error()})
			continue
		}
		out = append(out, StatusOf(obj))
	}
	return out
}

func hookName(h gitsyncv1.HookStatus) string {
	if h.Namespace == "" {
		return h.Kind + "/" + h.Name
	}
	return h.Kind + "/" + h.Namespace + "/" + h.Name
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func listOr(items []string, none string) string {
	if len(items) == 0 {
		return none
	}
	return strings.Join(items, ", ")
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
