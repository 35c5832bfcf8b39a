package ui

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/drift"
	"github.com/gitsync-dev/gitsync/internal/render"
)

// ObjectDiffs compares the objects want selects of objs (app's render) with the cluster
// through c, as a sync of app would apply them (its owner labels, its ignoreDifferences):
// drift.CompareObject, the compare that drift detection and `gitsync diff` use.
func ObjectDiffs(ctx context.Context, c client.Client, app *gitsyncv1.Application, objs []*unstructured.Unstructured, want func(subject string) bool) ([]ObjectDiff, error) {
	manager := apply.New(c, c, apply.Owner{Name: app.Name, Namespace: app.Namespace})
	var out []ObjectDiff
	for _, obj := range objs {
		subject := apply.Subject(obj)
		if !want(subject) {
			continue
		}
		ignore := render.IgnorePointers(app, obj)
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
	if !app.Prunes() {
		return nil
	}
	current := make([]apply.Entry, 0, len(objs))
	for _, o := range objs {
		current = append(current, apply.EntryOf(o))
	}
	var out []ObjectDiff
	for _, e := range apply.Stale(apply.EntriesOf(app.Status.Inventory), current) {
		if subject := e.Subject(); want(subject) {
			out = append(out, ObjectDiff{Subject: subject, Action: PrunedAction})
		}
	}
	return out
}

// PrunedAction is the Action of an object a sync would delete.
const PrunedAction = "pruned"

// DesiredDiffer diffs what the operator last applied (desired: the drift controller's
// record, by Application) with the cluster: no render and no Git fetch per request. An
// Application whose revision the operator does not hold yet has no diff to show.
func DesiredDiffer(desired func(types.NamespacedName) ([]*unstructured.Unstructured, bool)) Differ {
	return func(ctx context.Context, _ *rest.Config, c client.Client, app *gitsyncv1.Application, want func(string) bool) ([]ObjectDiff, error) {
		objs, ok := desired(client.ObjectKeyFromObject(app))
		if !ok {
			return nil, fmt.Errorf("the operator holds no applied revision of %s/%s yet", app.Namespace, app.Name)
		}
		return ObjectDiffs(ctx, c, app, objs, want)
	}
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
