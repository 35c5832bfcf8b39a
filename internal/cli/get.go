package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1alpha1"
)

type getOptions struct {
	*options
	output         string
	selector       string
	statusSelector string
	watch          bool
}

func (o *options) newGetCommand() *cobra.Command {
	g := &getOptions{options: o}
	cmd := &cobra.Command{
		Use:   "get sources|apps [NAME]",
		Short: "List GitRepositories or Applications with their readiness, sync, health and revision",
		Example: `  gitsync get apps -A
  gitsync get apps --status-selector ready=false -A
  gitsync get source app -n team-a -o yaml
  gitsync get apps -w`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: o.completeKindAndName,
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.run(cmd.Context(), args)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&g.output, "output", "o", "table", "output format: table, json or yaml")
	f.StringVarP(&g.selector, "selector", "l", "", "label selector, as kubectl's -l")
	f.StringVar(&g.statusSelector, "status-selector", "", "filter by status: ready=true|false|unknown, sync=, health=, suspended= (comma-separated)")
	f.BoolVarP(&g.watch, "watch", "w", false, "after listing, watch for changes and print each changed object")
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "list across all namespaces")
	return cmd
}

func (g *getOptions) run(ctx context.Context, args []string) error {
	k, err := parseKind(args[0])
	if err != nil {
		return err
	}
	switch g.output {
	case "table", "json", "yaml":
	default:
		return fmt.Errorf("--output %q: use table, json or yaml", g.output)
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
	if len(args) == 2 {
		obj := k.newObject()
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: args[1]}, obj); err != nil {
			return notFoundOr(err, k, ns, args[1])
		}
		if err := g.print([]client.Object{obj}, false, sel); err != nil {
			return err
		}
		if g.watch {
			return g.watchObjects(ctx, c, k, ns, args[1], obj.GetResourceVersion(), sel)
		}
		return nil
	}

	list := k.newList()
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
	if err := c.List(ctx, list, opts...); err != nil {
		return fmt.Errorf("listing %s: %w", k.kindName(), err)
	}
	objs := items(list)
	if len(objs) == 0 && g.output == "table" && !g.watch {
		where := "namespace " + ns
		if g.allNamespaces {
			where = "any namespace"
		}
		fmt.Fprintf(g.ErrOut, "No %s found in %s.\n", k.kindName(), where)
		return nil
	}
	if err := g.print(objs, true, sel); err != nil {
		return err
	}
	if g.watch {
		lm, _ := list.(interface{ GetResourceVersion() string })
		return g.watchObjects(ctx, c, k, ns, "", lm.GetResourceVersion(), sel)
	}
	return nil
}

// notFoundOr turns a NotFound error into a clear message (exit code 1).
func notFoundOr(err error, k kind, ns, name string) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%s %q not found in namespace %s", k.kindName(), name, ns)
	}
	return fmt.Errorf("reading %s %s/%s: %w", k.kindName(), ns, name, err)
}

// print writes the objects as a table (header when header is true) or as JSON/YAML.
func (g *getOptions) print(objs []client.Object, header bool, sel statusSelector) error {
	now := time.Now()
	var shown []client.Object
	for _, obj := range objs {
		if sel.matches(rowOf(obj, now)) {
			shown = append(shown, obj)
		}
	}
	switch g.output {
	case "json", "yaml":
		return printObjects(g.Out, g.output, shown, len(objs) == 1 && !header)
	}
	printTable(g.Out, shown, header, g.allNamespaces, now)
	return nil
}

func printTable(w io.Writer, objs []client.Object, header, withNamespace bool, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	if header {
		if withNamespace {
			fmt.Fprint(tw, "NAMESPACE\t")
		}
		fmt.Fprintln(tw, "NAME\tREADY\tSYNC\tHEALTH\tREVISION\tAGE\tMESSAGE")
	}
	for _, obj := range objs {
		r := rowOf(obj, now)
		if withNamespace {
			fmt.Fprintf(tw, "%s\t", r.Namespace)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Ready, r.Sync, r.Health, r.Revision, r.Age, r.Message)
	}
	tw.Flush()
}

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
	case *gitsyncv1.Application:
		o.TypeMeta = metav1.TypeMeta{APIVersion: gitsyncv1.GroupVersion.String(), Kind: gitsyncv1.ApplicationKind}
	}
}

// watchObjects prints every change after resourceVersion (a watch, not a poll) until ctx
// ends. With name, only that object.
func (g *getOptions) watchObjects(ctx context.Context, c client.WithWatch, k kind, ns, name, rv string, sel statusSelector) error {
	opts := []client.ListOption{&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: false}}}
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
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil
			}
			switch ev.Type {
			case watch.Added, watch.Modified, watch.Deleted:
			case watch.Error:
				return fmt.Errorf("watching %s: %v", k.kindName(), apierrors.FromObject(ev.Object))
			default:
				continue
			}
			obj, ok := ev.Object.(client.Object)
			if !ok {
				continue
			}
			if err := g.print([]client.Object{obj}, false, sel); err != nil {
				return err
			}
		}
	}
}
