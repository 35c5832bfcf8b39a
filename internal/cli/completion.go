package cli

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// completeKindAndName completes "sources|helmrepos|apps" then the names of that kind in the
// namespace of -n (shell completion of object names).
func (o *options) completeKindAndName(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	switch len(args) {
	case 0:
		return []string{"sources", "helmrepos", "apps"}, cobra.ShellCompDirectiveNoFileComp
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
