package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/operations"
)

func (o *options) newRollbackCommand() *cobra.Command {
	var to string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "rollback app NAME --to REVISION",
		Short: "Pin an Application to a revision from its history (applied at once); new commits wait until `gitsync resume app NAME`",
		Example: `  gitsync history app web
  gitsync rollback app web --to main@sha1:0123abc...   # or a unique commit prefix: --to 0123abc
  gitsync rollback appset fleet --to main@sha1:0123456789abcdef0123456789abcdef01234567   # pins every generated Application`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: o.completeAppName,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			if isAppSet(args[0]) {
				return o.rollbackAppSet(ctx, args[1], to)
			}
			if k, err := parseKind(args[0]); err != nil || k != kindApp {
				return fmt.Errorf("rollback works on apps: gitsync rollback app NAME")
			}
			return o.rollback(ctx, "", args[1], to)
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "revision from `gitsync history app NAME` (<ref>@sha1:<commit>, or a unique commit prefix)")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait for the rollback to be applied")
	_ = cmd.MarkFlagRequired("to")
	_ = cmd.RegisterFlagCompletionFunc("to", o.completeHistory)
	withAppSetHelp(cmd, appSetForm{
		use: "rollback appset NAME --to REVISION",
		long: `Sets the ApplicationSet's spec.rollback: every Application it generates is pinned to
REVISION (<ref>@sha1:<40 hex>, as status.rollout.revision shows) at once, without steps,
until --to "" clears it; then the source's revision rolls out again from the first step.`,
		example: `  gitsync rollback appset fleet --to main@sha1:0123456789abcdef0123456789abcdef01234567
  gitsync rollback app web --to main@sha1:0123abc...   # one Application`,
	})
	return cmd
}

// rollback pins the Application ns/name (ns "": the kubeconfig's namespace) to the
// revision of its history that to names, waits for the sync and prints each step
// (operations.Rollback).
func (o *options) rollback(ctx context.Context, ns, name, to string) error {
	c, app, err := o.readApp(ctx, ns, name)
	if err != nil {
		return err
	}
	return operations.Rollback(ctx, c, client.ObjectKeyFromObject(app), to, o.printStep)
}

// pinnedRevision is spec.pinnedRevision.
func pinnedRevision(app *gitsyncv1.Application) string { return app.Spec.PinnedRevision }
