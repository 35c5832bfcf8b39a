package operations

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/apply"
	sops "github.com/gitsync-dev/gitsync/internal/decrypt"
	"github.com/gitsync-dev/gitsync/internal/drift"
	"github.com/gitsync-dev/gitsync/internal/redact"
	"github.com/gitsync-dev/gitsync/internal/render"
)

// Outcome is what the next sync would do to one object.
type Outcome struct {
	Subject string
	// Action is created, configured, unchanged, pruned, or encrypted (left
	// SOPS-encrypted, not compared).
	Action string
	Fields []drift.Field
	// Diff is a unified diff from live to Git (not masked: see Diff.Report).
	Diff string
	// Err is why the API server refused the object's dry-run (Action Failed; CompareEach).
	Err string
	// Forbidden: the refusal was RBAC's (the Application's identity may not do it).
	Forbidden bool
}

// Encrypted is the Action of an object left SOPS-encrypted and not compared.
const Encrypted = "encrypted"

// Failed is the Action of an object whose dry-run the API server refused (CompareEach).
const Failed = "failed"

// Diff is what the next sync of an Application would change.
type Diff struct {
	App      *gitsyncv1.Application
	Rendered *Rendered
	Outcomes []Outcome
	// Hooks name the hooks a sync would run, "Phase Kind/namespace/name" (DiffAppsAt).
	Hooks []string
}

// DiffOptions say what a diff renders: Revision (see RenderAtRevision; "": the source's
// current or pinned revision), with Decrypt the SOPS-encrypted content decrypted with
// the person's rights, with Lookup a chart's lookup served with them.
type DiffOptions struct {
	Revision        string
	Decrypt, Lookup bool
}

// DiffApp renders the Application at key as opts say and compares it with the cluster
// (Compare), as the person c and cfg act as.
func DiffApp(ctx context.Context, cfg *rest.Config, c client.Client, key client.ObjectKey, opts DiffOptions) (*Diff, error) {
	app, err := GetApp(ctx, c, key)
	if err != nil {
		return nil, err
	}
	cluster := Cluster(cfg, c, app, opts.Decrypt, opts.Lookup)
	_, target, err := OnItsCluster(ctx, c, app) // cluster.go: spec.cluster
	if err != nil {
		return nil, err
	}
	onClusterRender(cluster, target)
	var r *Rendered
	if opts.Revision != "" {
		r, err = RenderAtRevision(ctx, c, app, opts.Revision, cluster, opts.Decrypt)
	} else {
		r, err = RenderFromSource(ctx, c, app, app.Spec.PinnedRevision, cluster, opts.Decrypt)
	}
	if err != nil {
		return nil, err
	}
	return DiffRendered(ctx, c, app, r)
}

// DiffRendered compares r, a render of app, with the cluster it syncs to.
func DiffRendered(ctx context.Context, c client.Client, app *gitsyncv1.Application, r *Rendered) (*Diff, error) {
	objs, err := render.MainSet(r.Objects)
	if err != nil {
		return nil, err
	}
	if c, _, err = OnItsCluster(ctx, c, app); err != nil { // cluster.go: spec.cluster
		return nil, err
	}
	outcomes, err := Compare(ctx, c, app, objs)
	if err != nil {
		return nil, err
	}
	return &Diff{App: app, Rendered: r, Outcomes: outcomes}, nil
}

// Compare dry-runs each object (as the Application's sync would, with its owner labels)
// and diffs it with the live one through drift.CompareObject, the drift detector's
// engine; the inventory's entries a sync would prune come last. The first object the
// API server refuses fails the whole compare.
func Compare(ctx context.Context, c client.Client, app *gitsyncv1.Application, objs []*unstructured.Unstructured) ([]Outcome, error) {
	return compare(ctx, c, app, objs, false)
}

// CompareEach is Compare that goes on past an object the API server refuses (schema,
// admission, RBAC): that object's Outcome is Failed with the refusal in Err. A preview
// reports every refusal at once.
func CompareEach(ctx context.Context, c client.Client, app *gitsyncv1.Application, objs []*unstructured.Unstructured) ([]Outcome, error) {
	return compare(ctx, c, app, objs, true)
}

func compare(ctx context.Context, c client.Client, app *gitsyncv1.Application, objs []*unstructured.Unstructured, each bool) ([]Outcome, error) {
	manager := apply.New(c, c, apply.Owner{Name: app.Name, Namespace: app.Namespace})
	var out []Outcome
	for _, obj := range objs {
		subject := apply.Subject(obj)
		if sops.IsEncrypted(obj) {
			// Left encrypted (no decrypt): its "sops" field makes a dry-run fail.
			out = append(out, Outcome{Subject: subject, Action: Encrypted})
			continue
		}
		ignore := app.IgnorePointers(obj)
		o, err := drift.CompareObject(ctx, manager, subject, obj, ignore)
		if err != nil {
			if dependsOnCreated(obj, objs, err) {
				out = append(out, Outcome{Subject: subject, Action: drift.Created})
				continue
			}
			if each && ctx.Err() == nil {
				out = append(out, Outcome{Subject: subject, Action: Failed, Err: err.Error(), Forbidden: apierrors.IsForbidden(err)})
				continue
			}
			if apierrors.IsForbidden(err) {
				return nil, fmt.Errorf("%w (a server-side dry-run apply needs patch permission on the object in Kubernetes, and get to read it)", err)
			}
			return nil, err
		}
		text, err := o.UnifiedDiff(ignore)
		if err != nil {
			return nil, fmt.Errorf("comparing %s: %w", subject, err)
		}
		out = append(out, Outcome{Subject: subject, Action: o.Action, Fields: o.Fields, Diff: text})
	}
	if previous := apply.EntriesOf(app.Status.Inventory); app.RefusesEmpty(len(objs), len(previous)) {
		return nil, fmt.Errorf("the render has no objects: a sync refuses it rather than prune all %d objects of the inventory (set allowEmpty: true to allow it)", len(previous))
	}
	for _, subject := range prunedSubjects(app, objs) {
		out = append(out, Outcome{Subject: subject, Action: PrunedAction})
	}
	return out, nil
}

// dependsOnCreated says whether obj could not be dry-run only because its Namespace or
// its kind's CRD is created by the same set (as the sync applies those first).
func dependsOnCreated(obj *unstructured.Unstructured, objs []*unstructured.Unstructured, err error) bool {
	if !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) && !strings.Contains(err.Error(), "no matches for kind") {
		return false
	}
	gvk := obj.GroupVersionKind()
	for _, o := range objs {
		ogvk := o.GroupVersionKind()
		if ogvk.Group == "" && ogvk.Kind == "Namespace" && o.GetName() == obj.GetNamespace() && obj.GetNamespace() != "" {
			return true
		}
		if ogvk.Group == "apiextensions.k8s.io" && ogvk.Kind == "CustomResourceDefinition" {
			group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
			kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
			if group == gvk.Group && kind == gvk.Kind {
				return true
			}
		}
	}
	return false
}

// Changes tells whether the sync would create, change or prune an object.
func (d *Diff) Changes() bool {
	for _, o := range d.Outcomes {
		if o.Action == drift.Created || o.Action == drift.Configured || o.Action == PrunedAction {
			return true
		}
	}
	return false
}

// Report is the diff as `gitsync diff` prints it, with the render's sensitive values
// masked: one line per object that would change, its changed fields and a unified YAML
// diff, then the counts.
func (d *Diff) Report() string {
	var w strings.Builder
	fmt.Fprintf(&w, "Application %s/%s, %s\n", d.App.Namespace, d.App.Name, d.Rendered.From)
	for _, ch := range d.SourceChanges() { // which of several sources changed
		from := "(not applied yet)"
		if ch.From != "" {
			from = ShortRevision(ch.From)
		}
		fmt.Fprintf(&w, "source %s: %s → %s\n", ch.Source, from, ShortRevision(ch.To))
	}
	counts := map[string]int{}
	for _, o := range d.Outcomes {
		counts[o.Action]++
		switch o.Action {
		case drift.Created, PrunedAction:
			fmt.Fprintf(&w, "%-10s %s\n", o.Action, o.Subject)
		case Encrypted:
			fmt.Fprintf(&w, "%-10s %s (SOPS-encrypted, not compared: --decrypt)\n", o.Action, o.Subject)
		case Failed:
			fmt.Fprintf(&w, "%-10s %s: %s\n", o.Action, o.Subject, o.Err)
		case drift.Configured:
			fmt.Fprintf(&w, "%-10s %s\n", o.Action, o.Subject)
			for _, f := range o.Fields {
				fmt.Fprintf(&w, "    %s\n", f.Path)
			}
			for _, line := range strings.SplitAfter(o.Diff, "\n") {
				if line != "" {
					fmt.Fprintf(&w, "    %s", line)
				}
			}
		}
	}
	if counts[Failed] > 0 {
		fmt.Fprintf(&w, "%d refused by the API server\n", counts[Failed])
	}
	if !d.Changes() {
		fmt.Fprintf(&w, "no changes (%d unchanged)\n", counts[drift.Unchanged])
	} else {
		fmt.Fprintf(&w, "%d created, %d configured, %d pruned, %d unchanged\n",
			counts[drift.Created], counts[drift.Configured], counts[PrunedAction], counts[drift.Unchanged])
	}
	return redact.Values(w.String(), d.Rendered.Sensitive...)
}
