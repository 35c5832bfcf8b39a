package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/apply"
	sops "github.com/gitsync-dev/gitsync/internal/decrypt"
	"github.com/gitsync-dev/gitsync/internal/drift"
	"github.com/gitsync-dev/gitsync/internal/render"
)

type diffOptions struct {
	*options
	path     string
	root     string
	exitCode bool
	decrypt  bool
	lookup   bool
}

func (o *options) newDiffCommand() *cobra.Command {
	d := &diffOptions{options: o}
	cmd := &cobra.Command{
		Use:   "diff app NAME [--path DIR]",
		Short: "Show what the next sync of an Application would change (server-side dry-run; exit 0 none, 1 changes, 2 error)",
		Long: `Renders the Application (from DIR, or else from its source's current revision) the way
a sync does, and compares every object with the cluster by a server-side dry-run apply,
field by field, with the same owner labels and ignoreDifferences as the drift detector.
Secret values are never printed. Exit codes: 0 no change, 1 changes, 2 any error.
SOPS-encrypted documents (spec.decryption) are left encrypted and not compared unless
--decrypt, which reads the decryption Secret with your own rights; decrypted values and
variables from Secrets (spec.postBuild.substituteFrom) are masked either way.
A dry-run apply needs patch permission on the objects in Kubernetes. A chart of a
HelmRepository is pulled from the repository (the version spec.helm.version selects).
A chart's lookup finds nothing unless --lookup: it would read the cluster with your
rights, which are often more than the Application's.`,
		Example: `  gitsync diff app web -n team-a
  gitsync diff app web --path ./apps/web/overlays/prod`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: o.completeAppName,
		Annotations:       map[string]string{errorExitCodeAnnotation: "true"},
		RunE: func(cmd *cobra.Command, args []string) error {
			changes, err := d.run(cmd.Context(), args)
			if err != nil {
				return &ExitCodeError{Code: ExitError, Err: err}
			}
			if changes && d.exitCode {
				return &ExitCodeError{Code: ExitChanges}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&d.path, "path", "", "directory to render instead of the source's revision (the kustomization or YAML directory itself; confined to --root)")
	cmd.Flags().StringVar(&d.root, "root", "", "with --path: the directory the render may read (an overlay's ../base must be inside it); default: the Git worktree holding --path, else --path itself (as Argo CD's --local-repo-root)")
	cmd.Flags().BoolVar(&d.exitCode, "exit-code", true, "exit 1 when there are changes; false: exit 0 unless an error occurs")
	cmd.Flags().BoolVar(&d.decrypt, "decrypt", false, "decrypt SOPS-encrypted documents with the decryption Secret, read with your rights (values stay masked)")
	addLookupFlag(cmd, &d.lookup)
	return cmd
}

// outcome of one object in a diff.
type outcome struct {
	subject string
	action  string // created, configured, unchanged, pruned
	fields  []drift.Field
	diff    string
}

// run prints the diff and says whether anything would change.
func (d *diffOptions) run(ctx context.Context, args []string) (bool, error) {
	if k, err := parseKind(args[0]); err != nil || k != kindApp {
		return false, fmt.Errorf("diff works on apps: gitsync diff app NAME")
	}
	app, r, outcomes, err := d.diffApp(ctx, "", args[1], localPath{Dir: d.path, Root: d.root}, "", d.decrypt, d.lookup)
	if err != nil {
		return false, err
	}
	return report(maskingWriter{w: d.Out, sensitive: r.sensitive}, app, r.from, outcomes), nil
}

// diffApp renders the Application ns/name (ns "": the kubeconfig's namespace) from local,
// else from revision (a commit or a branch of its GitRepository, see renderAtRevision),
// else from its source's current (or pinned) revision, and compares it with the cluster.
// With decrypt, SOPS-encrypted content is decrypted with the user's rights to the
// decryption Secret (its values stay masked); with lookup, a chart's lookup reads the
// cluster as the user (else it finds nothing). It returns the Application, the render
// (where it came from, what to mask) and the outcomes.
func (o *options) diffApp(ctx context.Context, ns, name string, local localPath, revision string, decrypt, lookup bool) (*gitsyncv1.Application, *rendered, []outcome, error) {
	c, err := o.client()
	if err != nil {
		return nil, nil, nil, err
	}
	if ns == "" {
		if ns, err = o.namespace(); err != nil {
			return nil, nil, nil, err
		}
	}
	app := &gitsyncv1.Application{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, app); err != nil {
		return nil, nil, nil, notFoundOr(err, kindApp, ns, name)
	}
	cfg, err := o.restConfig()
	if err != nil {
		return nil, nil, nil, err
	}
	cluster := clusterOf(cfg, c, app, decrypt, lookup)
	var r *rendered
	switch {
	case local.Dir != "":
		r, err = renderLocal(ctx, local, app, cluster, decrypt)
	case revision != "":
		r, err = renderAtRevision(ctx, c, app, revision, cluster, decrypt)
	default:
		r, err = renderFromSource(ctx, c, app, pinnedRevision(app), cluster, decrypt)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	objs, err := render.MainSet(r.objects)
	if err != nil {
		return nil, nil, nil, err
	}
	outcomes, err := compare(ctx, c, app, objs)
	if err != nil {
		return nil, nil, nil, err
	}
	return app, r, outcomes, nil
}

// compare dry-runs each object (as the Application's sync would, with its owner labels)
// and diffs it with the live one through drift.Diff, the drift detector's engine.
func compare(ctx context.Context, c client.Client, app *gitsyncv1.Application, objs []*unstructured.Unstructured) ([]outcome, error) {
	manager := apply.New(c, c, apply.Owner{Name: app.Name, Namespace: app.Namespace})
	var out []outcome
	var current []apply.Entry
	for _, obj := range objs {
		current = append(current, apply.EntryOf(obj))
		subject := apply.Subject(obj)
		if sops.IsEncrypted(obj) {
			// Left encrypted (no --decrypt): its "sops" field makes a dry-run fail.
			out = append(out, outcome{subject: subject, action: "encrypted"})
			continue
		}
		ignore := render.IgnorePointers(app, obj)
		o, err := drift.CompareObject(ctx, manager, subject, obj, ignore)
		if err != nil {
			if dependsOnCreated(obj, objs, err) {
				out = append(out, outcome{subject: subject, action: drift.Created})
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
		out = append(out, outcome{subject: subject, action: o.Action, fields: o.Fields, diff: text})
	}
	if previous := apply.EntriesOf(app.Status.Inventory); render.RefusesEmpty(app, len(objs), len(previous)) {
		return nil, fmt.Errorf("the render has no objects: a sync refuses it rather than prune all %d objects of the inventory (set allowEmpty: true to allow it)", len(previous))
	}
	if app.Prunes() {
		for _, e := range apply.Stale(apply.EntriesOf(app.Status.Inventory), current) {
			out = append(out, outcome{subject: e.Subject(), action: "pruned"})
		}
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

// report prints the outcomes and returns whether anything would change.
func report(w io.Writer, app *gitsyncv1.Application, from string, outcomes []outcome) bool {
	fmt.Fprintf(w, "Application %s/%s, %s\n", app.Namespace, app.Name, from)
	counts := map[string]int{}
	for _, o := range outcomes {
		counts[o.action]++
		switch o.action {
		case "created", "pruned":
			fmt.Fprintf(w, "%-10s %s\n", o.action, o.subject)
		case "encrypted":
			fmt.Fprintf(w, "%-10s %s (SOPS-encrypted, not compared: --decrypt)\n", o.action, o.subject)
		case "configured":
			fmt.Fprintf(w, "%-10s %s\n", o.action, o.subject)
			for _, f := range o.fields {
				fmt.Fprintf(w, "    %s\n", f.Path)
			}
			for _, line := range strings.SplitAfter(o.diff, "\n") {
				if line != "" {
					fmt.Fprintf(w, "    %s", line)
				}
			}
		}
	}
	changes := counts["created"] + counts["configured"] + counts["pruned"]
	if changes == 0 {
		fmt.Fprintf(w, "no changes (%d unchanged)\n", counts["unchanged"])
		return false
	}
	fmt.Fprintf(w, "%d created, %d configured, %d pruned, %d unchanged\n",
		counts["created"], counts["configured"], counts["pruned"], counts["unchanged"])
	return true
}
