package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1alpha1"
	"github.com/gitsync-dev/gitsync/internal/apply"
)

// node is one object of the tree.
type node struct {
	Kind      string  `json:"kind"`
	Namespace string  `json:"namespace,omitempty"`
	Name      string  `json:"name"`
	Health    string  `json:"health"`
	Children  []*node `json:"children,omitempty"`
}

// childKinds are the kinds looked up as owned children (--children).
var childKinds = []metav1.TypeMeta{
	{APIVersion: "apps/v1", Kind: "ReplicaSet"},
	{APIVersion: "v1", Kind: "Pod"},
	{APIVersion: "batch/v1", Kind: "Job"},
	{APIVersion: "apps/v1", Kind: "ControllerRevision"},
}

func (o *options) newTreeCommand() *cobra.Command {
	var children bool
	var output string
	cmd := &cobra.Command{
		Use:               "tree app NAME [--children] [-o json]",
		Short:             "Show an Application's inventory grouped by kind, each object with its health",
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: o.completeAppName,
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "" && output != "json" && output != "text" {
				return fmt.Errorf("--output %q: use text or json", output)
			}
			ctx := cmd.Context()
			c, app, err := o.getApp(ctx, args, "tree")
			if err != nil {
				return err
			}
			nodes, err := inventoryTree(ctx, c, app, children)
			if err != nil {
				return err
			}
			if output == "json" {
				enc := json.NewEncoder(o.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]any{"application": app.Namespace + "/" + app.Name, "objects": nodes})
			}
			printTree(o.Out, app, nodes)
			return nil
		},
	}
	cmd.Flags().BoolVar(&children, "children", false, "also show owned children (Deployment → ReplicaSet → Pod) through ownerReferences")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	return cmd
}

// inventoryTree returns one node per inventory entry, sorted by kind then name.
func inventoryTree(ctx context.Context, c client.Client, app *gitsyncv1.Application, children bool) ([]*node, error) {
	entries := apply.EntriesOf(app.Status.Inventory)
	health, err := apply.New(c, c, apply.Owner{Name: app.Name, Namespace: app.Namespace}).Health(ctx, entries)
	if err != nil {
		return nil, err
	}
	var nodes []*node
	namespaces := map[string]bool{}
	for _, e := range entries {
		m, err := e.ObjMetadata()
		if err != nil {
			return nil, err
		}
		n := &node{Kind: m.GroupKind.Kind, Namespace: m.Namespace, Name: m.Name, Health: health.Objects[e.Subject()]}
		if n.Health == "" {
			n.Health = gitsyncv1.HealthStatusUnknown
		}
		nodes = append(nodes, n)
		if m.Namespace != "" {
			namespaces[m.Namespace] = true
		}
	}
	sort.SliceStable(nodes, func(i, j int) bool {
		if nodes[i].Kind != nodes[j].Kind {
			return nodes[i].Kind < nodes[j].Kind
		}
		return nodes[i].Namespace+"/"+nodes[i].Name < nodes[j].Namespace+"/"+nodes[j].Name
	})
	if children {
		if err := addChildren(ctx, c, nodes, namespaces); err != nil {
			return nil, err
		}
	}
	return nodes, nil
}

// addChildren hangs each owned object under its owner (by ownerReferences' uid).
func addChildren(ctx context.Context, c client.Client, nodes []*node, namespaces map[string]bool) error {
	byUID := map[types.UID]*node{}
	var owned []*unstructured.Unstructured
	for ns := range namespaces {
		for _, tm := range append([]metav1.TypeMeta{{APIVersion: "apps/v1", Kind: "Deployment"}, {APIVersion: "apps/v1", Kind: "StatefulSet"},
			{APIVersion: "apps/v1", Kind: "DaemonSet"}, {APIVersion: "batch/v1", Kind: "CronJob"}}, childKinds...) {
			list := &unstructured.UnstructuredList{}
			list.SetAPIVersion(tm.APIVersion)
			list.SetKind(tm.Kind + "List")
			if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
				return fmt.Errorf("listing %s in %s: %w", tm.Kind, ns, err)
			}
			for i := range list.Items {
				item := &list.Items[i]
				for _, n := range nodes {
					if n.Kind == tm.Kind && n.Namespace == ns && n.Name == item.GetName() {
						byUID[item.GetUID()] = n
					}
				}
				if len(item.GetOwnerReferences()) > 0 {
					owned = append(owned, item)
				}
			}
		}
	}
	// Children first become nodes of their own, then are attached to their owners.
	childNodes := map[types.UID]*node{}
	for _, obj := range owned {
		health, _ := apply.KstatusHealth(obj)
		childNodes[obj.GetUID()] = &node{Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName(), Health: health}
	}
	for _, obj := range owned {
		child := childNodes[obj.GetUID()]
		for _, ref := range obj.GetOwnerReferences() {
			parent := byUID[ref.UID]
			if parent == nil {
				parent = childNodes[ref.UID]
			}
			if parent != nil {
				parent.Children = append(parent.Children, child)
				break
			}
		}
	}
	return nil
}

func printTree(w io.Writer, app *gitsyncv1.Application, nodes []*node) {
	health := "-"
	if app.Status.Health != nil {
		health = app.Status.Health.Status
	}
	fmt.Fprintf(w, "Application/%s/%s (%s)\n", app.Namespace, app.Name, health)
	kinds := []string{}
	byKind := map[string][]*node{}
	for _, n := range nodes {
		if _, ok := byKind[n.Kind]; !ok {
			kinds = append(kinds, n.Kind)
		}
		byKind[n.Kind] = append(byKind[n.Kind], n)
	}
	for i, k := range kinds {
		last := i == len(kinds)-1
		fmt.Fprintf(w, "%s %s\n", branch(last), k)
		printNodes(w, byKind[k], indent("", last))
	}
}

func printNodes(w io.Writer, nodes []*node, prefix string) {
	for i, n := range nodes {
		last := i == len(nodes)-1
		name := n.Name
		if n.Namespace != "" {
			name = n.Namespace + "/" + n.Name
		}
		fmt.Fprintf(w, "%s%s %s/%s (%s)\n", prefix, branch(last), n.Kind, name, n.Health)
		printNodes(w, n.Children, indent(prefix, last))
	}
}

func branch(last bool) string {
	if last {
		return "└──"
	}
	return "├──"
}

func indent(prefix string, last bool) string {
	if last {
		return prefix + "    "
	}
	return prefix + "│   "
}
