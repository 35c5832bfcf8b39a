package cli

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// completeKindAndName completes "sources|helmrepos|apps" then the names of that kind in the
// namespace of -n (shell completion of object names).
func (o *options) completeKindAndName(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	switch len(args) {
	case 0:
		return []string{"sources", "helmrepos", "apps", "ocirepos"}, cobra.ShellCompDirectiveNoFileComp
	case 1:
		k, err := parseKind(args[0])
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return o.objectNames(cmd.Context(), k, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
	return nil, cobra.ShellCompDirectiveNoFileComp
}

// completeAppName completes the NAME of `VERB app NAME`.
func (o *options) completeAppName(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) == 0 {
		return []string{"app"}, cobra.ShellCompDirectiveNoFileComp
	}
	return o.completeKindAndName(cmd, args, toComplete)
}

func (o *options) objectNames(ctx context.Context, k kind, prefix string) []string {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := o.client()
	if err != nil {
		return nil
	}
	ns, err := o.namespace()
	if err != nil {
		return nil
	}
	list := k.newList()
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil
	}
	var names []string
	for _, obj := range items(list) {
		if strings.HasPrefix(obj.GetName(), prefix) {
			names = append(names, obj.GetName())
		}
	}
	return names
}

// completeNamespaces completes -n with the cluster's namespaces.
func (o *options) completeNamespaces(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
	defer cancel()
	c, err := o.client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	list := &corev1.NamespaceList{}
	if err := c.List(ctx, list); err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	for _, ns := range list.Items {
		if strings.HasPrefix(ns.Name, toComplete) {
			names = append(names, ns.Name)
		}
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// completeFixed completes a flag with fixed values.
func completeFixed(values ...string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeHistory completes --to with the revisions of the named Application's history,
// newest first.
func (o *options) completeHistory(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) < 2 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
	defer cancel()
	_, app, err := o.readApp(ctx, "", args[1])
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var revisions []string
	seen := map[string]bool{}
	for i := len(app.Status.History) - 1; i >= 0; i-- {
		rev := app.Status.History[i].Revision
		if !seen[rev] && strings.HasPrefix(rev, toComplete) {
			seen[rev] = true
			revisions = append(revisions, rev)
		}
	}
	return revisions, cobra.ShellCompDirectiveNoFileComp
}
