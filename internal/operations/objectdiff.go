package operations

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/apply"
	sops "github.com/gitsync-dev/gitsync/internal/decrypt"
	"github.com/gitsync-dev/gitsync/internal/drift"
	"github.com/gitsync-dev/gitsync/internal/redact"
)

// ObjectDiff is one object of an Application as Git renders it and as it is live, both
// as YAML with Secret values masked, and the fields that differ.
type ObjectDiff struct {
	// Subject is "Kind/namespace/name" ("Kind/name" when cluster-scoped).
	Subject string `json:"subject"`
	// Action is what a sync would do: created, configured, unchanged or pruned.
	Action string `json:"action"`
	Live   string `json:"live,omitempty"`
	Git    string `json:"git,omitempty"`
	// Fields are the differing field paths (drift.Field paths).
	Fields []string `json:"fields,omitempty"`
	// Diff is a unified diff from live to Git.
	Diff string `json:"diff,omitempty"`
}

// PrunedAction is the Action of an object a sync would delete.
const PrunedAction = "pruned"

// ObjectDiffsFromSource renders app from its source's current (or pinned) revision as
// `gitsync diff` does and compares the objects want selects with the cluster
// (ObjectDiffs), with the render's sensitive values masked; the inventory's entries a
// sync would prune come last. It never decrypts (SOPS documents stay encrypted and are
// not compared), and a chart's lookup finds nothing: the viewer's rights must not be
// lent to a tenant's chart. The web UI shows it.
func ObjectDiffsFromSource(ctx context.Context, cfg *rest.Config, c client.Client, app *gitsyncv1.Application, want func(subject string) bool) ([]ObjectDiff, error) {
	r, err := RenderFromSource(ctx, c, app, app.Spec.PinnedRevision, Cluster(cfg, c, app, false, false), false)
	if err != nil {
		return nil, err
	}
	objs := make([]*unstructured.Unstructured, 0, len(r.Objects))
	for _, o := range r.Objects {
		if !sops.IsEncrypted(o) {
			objs = append(objs, o)
		}
	}
	diffs, err := ObjectDiffs(ctx, c, app, objs, want)
	if err != nil {
		return nil, err
	}
	for i := range diffs {
		d := &diffs[i]
		d.Git, d.Live, d.Diff = redact.Values(d.Git, r.Sensitive...), redact.Values(d.Live, r.Sensitive...), redact.Values(d.Diff, r.Sensitive...)
	}
	return append(diffs, Pruned(app, r.Objects, want)...), nil
}

// ObjectDiffs compares the objects want selects of objs (app's render) with the cluster
// through c, as a sync of app would apply them (its owner labels, its ignoreDifferences):
// drift.CompareObject, the compare that drift detection and `gitsync diff` use. With
// spec.cluster the live objects are those on app's Cluster (OnItsCluster).
func ObjectDiffs(ctx context.Context, c client.Client, app *gitsyncv1.Application, objs []*unstructured.Unstructured, want func(subject string) bool) ([]ObjectDiff, error) {
	c, _, err := OnItsCluster(ctx, c, app) // cluster.go: spec.cluster
	if err != nil {
		return nil, err
	}
	manager := apply.New(c, c, apply.Owner{Name: app.Name, Namespace: app.Namespace})
	var out []ObjectDiff
	for _, obj := range objs {
		subject := apply.Subject(obj)
		if !want(subject) {
			continue
		}
		ignore := app.IgnorePointers(obj)
		o, err := drift.CompareObject(ctx, manager, subject, obj, ignore)
		if err != nil {
			return nil, err
		}
		d, err := DiffOf(o, obj, ignore)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// Pruned lists as "pruned" diffs the entries of app's inventory that objs (the whole
// render, SOPS documents included) no longer holds, when a sync now prunes (`gitsync
// diff` lists them the same way).
func Pruned(app *gitsyncv1.Application, objs []*unstructured.Unstructured, want func(subject string) bool) []ObjectDiff {
	var out []ObjectDiff
	for _, subject := range prunedSubjects(app, objs) {
		if want(subject) {
			out = append(out, ObjectDiff{Subject: subject, Action: PrunedAction})
		}
	}
	return out
}

// prunedSubjects are the subjects of the entries of app's inventory that objs (the whole
// render) no longer holds, when a sync of app prunes; none when it does not.
func prunedSubjects(app *gitsyncv1.Application, objs []*unstructured.Unstructured) []string {
	if !app.Prunes() {
		return nil
	}
	current := make([]apply.Entry, 0, len(objs))
	for _, o := range objs {
		current = append(current, apply.EntryOf(o))
	}
	var out []string
	for _, e := range apply.Stale(apply.EntriesOf(app.Status.Inventory), current) {
		out = append(out, e.Subject())
	}
	return out
}

// DiffOf turns one compare (drift.CompareObject of obj, Git's version) into what the UI
// shows: the changed fields, a unified diff and both sides as YAML, Secret values masked.
func DiffOf(o *drift.Outcome, obj *unstructured.Unstructured, ignore []string) (ObjectDiff, error) {
	d := ObjectDiff{Subject: o.Subject, Action: o.Action}
	for _, f := range o.Fields {
		d.Fields = append(d.Fields, f.Path)
	}
	shown, err := o.Show(obj, ignore)
	if err != nil {
		return d, err
	}
	d.Live, d.Git, d.Diff = shown.Live, shown.Git, shown.Diff
	return d, nil
}
