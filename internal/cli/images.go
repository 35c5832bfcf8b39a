package cli

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitsync-dev/gitsync/internal/operations"
)

// newGetImagesCommand is `gitsync get images`: image repositories, policies (with the
// image each chose) and automations (with their last push).
func (o *options) newGetImagesCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "images",
		Short:   "List ImageRepositories, ImagePolicies (with the latest image) and ImageUpdateAutomations",
		Example: "  gitsync get images -A\n  gitsync get images -n apps",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.getImages(cmd.Context())
		},
	}
	cmd.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "list across all namespaces")
	return cmd
}

func (o *options) getImages(ctx context.Context) error {
	c, err := o.client()
	if err != nil {
		return err
	}
	ns := ""
	if !o.allNamespaces {
		if ns, err = o.namespace(); err != nil {
			return err
		}
	}
	rows, err := operations.Images(ctx, c, ns)
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		fmt.Fprintln(o.ErrOut, "no image automation objects found")
		return nil
	}
	w := tabwriter.NewWriter(o.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAMESPACE\tKIND\tNAME\tIMAGE/SOURCE\tLATEST\tREADY\tMESSAGE")
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Namespace, r.Kind, r.Name, r.Image, r.Latest, r.Ready, r.Message)
	}
	return w.Flush()
}

// newReconcileImageCommand is `gitsync reconcile image repository|policy|update NAME`.
func (o *options) newReconcileImageCommand() *cobra.Command {
	timeout := time.Minute
	cmd := &cobra.Command{
		Use:   "image repository|policy|update NAME",
		Short: "Scan an ImageRepository, choose an ImagePolicy's image or run an ImageUpdateAutomation now, and print the outcome",
		Example: `  gitsync reconcile image repository podinfo
  gitsync reconcile image update flux-system`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := operations.ParseImageKind(args[0])
			if err != nil {
				return err
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			ns, err := o.namespace()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			msg, err := operations.ReconcileImage(ctx, c, k, client.ObjectKey{Namespace: ns, Name: args[1]})
			if err != nil {
				return err
			}
			fmt.Fprintf(o.Out, "%s %s/%s: %s\n", k, ns, args[1], msg)
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", timeout, "how long to wait for the outcome")
	return cmd
}
