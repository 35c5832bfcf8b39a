package cli

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/operations"
	"github.com/gitsync-dev/gitsync/internal/tree"
)

// node is one object of the tree (internal/tree, the one the web UI shows).
type node = tree.Node

func (o *options) newTreeCommand() *cobra.Command {
	var children bool
	var output string
	cmd := &cobra.Command{
		Use:               "tree app NAME [--children] [-o json]",
		Short:             "Show an Application's inventory grouped by kind, each object with its health (and drift), then the hooks of its last run",
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
			nodes, err := operations.Tree(ctx, c, app, children)
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

func printTree(w io.Writer, app *gitsyncv1.Application, nodes []*node) {
	health := "-"
	if app.Status.Health != nil {
		health = app.Status.Health.Status
	}
	fmt.Fprintf(w, "Application/%s/%s (%s)\n", app.Namespace, app.Name, health)
	kinds := []string{}
	byKind := map[string][]*node{}
	var hooks []*node
	for _, n := range nodes {
		if n.Hook != "" {
			hooks = append(hooks, n)
			continue
		}
		if _, ok := byKind[n.Kind]; !ok {
			kinds = append(kinds, n.Kind)
		}
		byKind[n.Kind] = append(byKind[n.Kind], n)
	}
	if len(hooks) > 0 {
		kinds = append(kinds, hooksGroup)
		byKind[hooksGroup] = hooks
	}
	for i, k := range kinds {
		last := i == len(kinds)-1
		fmt.Fprintf(w, "%s %s\n", branch(last), k)
		printNodes(w, byKind[k], indent("", last))
	}
}

// hooksGroup heads the hooks of the last run in a printed tree.
const hooksGroup = "Hooks of the last run"

func printNodes(w io.Writer, nodes []*node, prefix string) {
	for i, n := range nodes {
		last := i == len(nodes)-1
		name := n.Name
		if n.Namespace != "" {
			name = n.Namespace + "/" + n.Name
		}
		state := n.Health
		if n.Hook != "" {
			state = n.Hook + ", " + n.Health
		}
		if n.Drifted {
			state += ", drifted"
		}
		fmt.Fprintf(w, "%s%s %s/%s (%s)\n", prefix, branch(last), n.Kind, name, state)
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
