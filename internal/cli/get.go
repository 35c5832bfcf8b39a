package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

type getOptions struct {
	*options
	output string
	// showManagedFields keeps metadata.managedFields in -o json|yaml.
	showManagedFields bool
	selector          string
	statusSelector    string
	watch             bool
}

func (o *options) newGetCommand() *cobra.Command {
	g := &getOptions{options: o}
	cmd := &cobra.Command{
		Use:   "get sources|helmrepos|ocirepos|apps [NAME]",
		Short: "List sources (GitRepositories, HelmRepositories, OCIRepositories) or Applications with their readiness, sync, health and revision",
		Example: `  gitsync get apps -A
  gitsync get apps --status-selector ready=false -A
  gitsync get source app -n team-a -o yaml
  gitsync get apps -w
  gitsync get helmrepos -A`,
		Args:              cobra.RangeArgs(1, 3),
		ValidArgsFunction: o.completeKindAndName,
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.run(cmd.Context(), args)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&g.output, "output", "o", "table", "output format: table, wide, name, json or yaml")
	f.BoolVar(&g.showManagedFields, "show-managed-fields", false, "keep metadata.managedFields in json and yaml output")
	f.StringVarP(&g.selector, "selector", "l", "", "label selector, as kubectl's -l")
	f.StringVar(&g.statusSelector, "status-selector", "", "filter by status: ready=true|false|unknown, sync=, health=, suspended= (comma-separated)")
	f.BoolVarP(&g.watch, "watch", "w", false, "after listing, watch for changes and print each changed object")
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "list across all namespaces")
	cmd.AddCommand(o.newGetImagesCommand())
	return cmd
}

func (g *getOptions) run(ctx context.Context, args []string) error {
	k, err := parseKind(args[0])
	if err != nil {
		return err
	}
	switch g.output {
	case "table", "wide", "name", "json", "yaml":
	default:
		return fmt.Errorf("--output %q: use table, wide, name, json or yaml", g.output)
	}
	sel, err := parseStatusSelector(g.statusSelector)
	if err != nil {
		return err
	}
	c, err := g.client()
	if err != nil {
		return err
	}
	ns, err := g.namespace()
	if err != nil {
		return err
	}
	if len(args) > 1 {
		var name string
		if k, name, err = g.objectArgs("get", args); err != nil {
			return err
		}
		args = []string{args[0], name}
		obj, k, err := getSource(ctx, c, k, client.ObjectKey{Namespace: ns, Name: name})
		if err != nil {
			return err
		}
		if err := g.print(k, []client.Object{obj}, false, sel); err != nil {
			return err
		}
		if g.watch {
			return g.watchObjects(ctx, c, []kind{k}, ns, args[1], []string{obj.GetResourceVersion()}, sel)
		}
		return nil
	}

	opts := []client.ListOption{}
	if !g.allNamespaces {
		opts = append(opts, client.InNamespace(ns))
	}
	if g.selector != "" {
		ls, err := labels.Parse(g.selector)
		if err != nil {
			return fmt.Errorf("parsing --selector: %w", err)
		}
		opts = append(opts, client.MatchingLabelsSelector{Selector: ls})
	}
	// `get sources` lists both source kinds in one table (as `flux get sources all`).
	kinds := k.listed()
	var (
		all []client.Object
		rvs []string
	)
	for _, lk := range kinds {
		list := lk.newList()
		if err := c.List(ctx, list, opts...); err != nil {
			return fmt.Errorf("listing %s: %w", lk.kindName(), err)
		}
		all = append(all, items(list)...)
		rvs = append(rvs, list.(metav1.ListInterface).GetResourceVersion())
	}
	sortRows(k, all)
	if len(all) == 0 && g.tabular() && !g.watch {
		where := "namespace " + ns
		if g.allNamespaces {
			where = "any namespace"
		}
		names := make([]string, len(kinds))
		for i, lk := range kinds {
			names[i] = lk.kindName()
		}
		fmt.Fprintf(g.ErrOut, "No %s found in %s.\n", strings.Join(names, " or "), where)
		return nil
	}
	if err := g.print(k, all, true, sel); err != nil {
		return err
	}
	if g.watch {
		return g.watchObjects(ctx, c, kinds, ns, "", rvs, sel)
	}
	return nil
}

// getSource reads one object of k; a source that is no GitRepository may be a
// HelmRepository or an OCIRepository (`get source NAME`), whose kind it returns.
func getSource(ctx context.Context, c client.Client, k kind, key client.ObjectKey) (client.Object, kind, error) {
	obj := k.newObject()
	err := c.Get(ctx, key, obj)
	if k == kindSource && apierrors.IsNotFound(err) {
		for _, other := range []kind{kindHelmRepo, kindOCIRepo} {
			if obj := other.newObject(); c.Get(ctx, key, obj) == nil {
				return obj, other, nil
			}
		}
	}
	if err != nil {
		return nil, k, notFoundOr(err, k, key.Namespace, key.Name)
	}
	return obj, k, nil
}

// notFoundOr turns a NotFound error into a clear message (exit code 1).
func notFoundOr(err error, k kind, ns, name string) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%s %q not found in namespace %s", k.kindName(), name, ns)
	}
	return fmt.Errorf("reading %s %s/%s: %w", k.kindName(), ns, name, err)
}

// print writes the objects (listed as k) as a table (header when header is true) or as
// JSON/YAML.
func (g *getOptions) print(k kind, objs []client.Object, header bool, sel statusSelector) error {
	now := time.Now()
	var shown []client.Object
	for _, obj := range objs {
		if sel.matches(rowOf(obj, now)) {
			shown = append(shown, obj)
		}
	}
	switch g.output {
	case "json", "yaml":
		if !g.showManagedFields {
			for _, obj := range shown {
				obj.SetManagedFields(nil)
			}
		}
		return printObjects(g.Out, g.output, shown, len(objs) == 1 && !header)
	case "name":
		for _, obj := range shown {
			setTypeMeta(obj)
			fmt.Fprintf(g.Out, "%s.%s/%s\n", strings.ToLower(obj.GetObjectKind().GroupVersionKind().Kind), gitsyncv1.GroupVersion.Group, obj.GetName())
		}
		return nil
	}
	printTable(g.Out, k, shown, header, g.allNamespaces, g.output == "wide", now)
	return nil
}

// tabular tells whether the output is a table (table or wide).
func (g *getOptions) tabular() bool { return g.output == "table" || g.output == "wide" }

// printObjects writes one object, or a v1 List of them, as JSON or YAML with apiVersion
// and kind set (a typed client leaves them empty).
func printObjects(w io.Writer, format string, objs []client.Object, single bool) error {
	for _, obj := range objs {
		setTypeMeta(obj)
	}
	var v any
	if single && len(objs) == 1 {
		v = objs[0]
	} else {
		v = map[string]any{"apiVersion": "v1", "kind": "List", "items": objs}
	}
	var out []byte
	var err error
	if format == "json" {
		out, err = json.MarshalIndent(v, "", "    ")
		out = append(out, '\n')
	} else {
		out, err = yaml.Marshal(v)
	}
	if err != nil {
		return fmt.Errorf("encoding %s: %w", format, err)
	}
	_, err = w.Write(out)
	return err
}

func setTypeMeta(obj client.Object) {
	switch o := obj.(type) {
	case *gitsyncv1.GitRepository:
		o.TypeMeta = metav1.TypeMeta{APIVersion: gitsyncv1.GroupVersion.String(), Kind: gitsyncv1.GitRepositoryKind}
	case *gitsyncv1.HelmRepository:
		o.TypeMeta = metav1.TypeMeta{APIVersion: gitsyncv1.GroupVersion.String(), Kind: gitsyncv1.HelmRepositoryKind}
	case *gitsyncv1.OCIRepository:
		o.TypeMeta = metav1.TypeMeta{APIVersion: gitsyncv1.GroupVersion.String(), Kind: gitsyncv1.OCIRepositoryKind}
	case *gitsyncv1.Application:
		o.TypeMeta = metav1.TypeMeta{APIVersion: gitsyncv1.GroupVersion.String(), Kind: gitsyncv1.ApplicationKind}
	}
}

// watchObjects prints every change of the kinds after their resourceVersions (a watch,
// not a poll) until ctx ends. With name, only that object.
func (g *getOptions) watchObjects(ctx context.Context, c client.WithWatch, kinds []kind, ns, name string, rvs []string, sel statusSelector) error {
	type change struct {
		ev   watch.Event
		k    kind
		open bool
	}
	changes := make(chan change)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for i, k := range kinds {
		opts := []client.ListOption{&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rvs[i], AllowWatchBookmarks: false}}}
		if !g.allNamespaces || name != "" {
			opts = append(opts, client.InNamespace(ns))
		}
		if name != "" {
			opts = append(opts, client.MatchingFields{"metadata.name": name})
		}
		if g.selector != "" {
			ls, err := labels.Parse(g.selector)
			if err != nil {
				return fmt.Errorf("parsing --selector: %w", err)
			}
			opts = append(opts, client.MatchingLabelsSelector{Selector: ls})
		}
		w, err := c.Watch(ctx, k.newList(), opts...)
		if err != nil {
			return fmt.Errorf("watching %s: %w", k.kindName(), err)
		}
		defer w.Stop()
		go func() {
			for ev := range w.ResultChan() {
				select {
				case changes <- change{ev: ev, k: k, open: true}:
				case <-ctx.Done():
					return
				}
			}
			select {
			case changes <- change{k: k}:
			case <-ctx.Done():
			}
		}()
	}
	listedAs := kindApp
	if len(kinds) > 0 {
		listedAs = kinds[0]
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ch := <-changes:
			if !ch.open {
				return nil
			}
			switch ch.ev.Type {
			case watch.Added, watch.Modified, watch.Deleted:
			case watch.Error:
				return fmt.Errorf("watching %s: %v", ch.k.kindName(), apierrors.FromObject(ch.ev.Object))
			default:
				continue
			}
			obj, ok := ch.ev.Object.(client.Object)
			if !ok {
				continue
			}
			if err := g.print(listedAs, []client.Object{obj}, false, sel); err != nil {
				return err
			}
		}
	}
}
