package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/source"
)

func (o *options) newRollbackCommand() *cobra.Command {
	var to string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "rollback app NAME --to REVISION",
		Short: "Pin an Application to a revision from its history (applied at once); new commits wait until `gitsync resume app NAME`",
		Example: `  gitsync history app web
  gitsync rollback app web --to main@sha1:0123abc...   # or a unique commit prefix: --to 0123abc`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: o.completeAppName,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			if k, err := parseKind(args[0]); err != nil || k != kindApp {
				return fmt.Errorf("rollback works on apps: gitsync rollback app NAME")
			}
			return o.rollback(ctx, "", args[1], to)
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "revision from `gitsync history app NAME` (<ref>@sha1:<commit>, or a unique commit prefix)")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait for the rollback to be applied")
	_ = cmd.MarkFlagRequired("to")
	return cmd
}

// rollback pins the Application ns/name (ns "": the kubeconfig's namespace) to the
// revision of its history that to names, waits for the sync and prints the outcome.
func (o *options) rollback(ctx context.Context, ns, name, to string) error {
	c, app, err := o.readApp(ctx, ns, name)
	if err != nil {
		return err
	}
	if app.Spec.SourceRef.Kind == gitsyncv1.HelmRepositoryKind {
		// The controller refuses a pin of a chart: say how to roll a chart back.
		return fmt.Errorf("Application %s/%s renders a chart of HelmRepository %s: rollback pins a Git commit; "+
			"pin the chart version instead (spec.helm.version, e.g. the chartVersion of `gitsync history app %s`)",
			app.Namespace, app.Name, app.Spec.SourceRef.Name, app.Name)
	}
	rev, err := historyRevision(app, to)
	if err != nil {
		return err
	}
	if app.Spec.Suspend {
		return fmt.Errorf("Application %s/%s is suspended: resume it first (gitsync resume app %s -n %s)", app.Namespace, app.Name, app.Name, app.Namespace)
	}
	base := client.MergeFrom(app.DeepCopy())
	app.Spec.PinnedRevision = rev
	if err := c.Patch(ctx, app, base); err != nil {
		return fmt.Errorf("pinning Application %s/%s: %w", app.Namespace, app.Name, err)
	}
	fmt.Fprintf(o.Out, "Application %s/%s pinned to %s; newer commits are not applied until `gitsync resume app %s`\n",
		app.Namespace, app.Name, rev, app.Name)
	r := &reconcileOptions{options: o}
	obj, err := r.reconcile(ctx, c, kindApp, client.ObjectKeyFromObject(app))
	if err != nil {
		return err
	}
	r.printOutcome(obj, kindApp, client.ObjectKeyFromObject(app))
	return nil
}

// historyRevision finds the revision of status.history that to names: the whole revision,
// or a commit prefix of at least 7 hex digits matching exactly one revision.
func historyRevision(app *gitsyncv1.Application, to string) (string, error) {
	to = strings.TrimSpace(to)
	var found []string
	seen := map[string]bool{}
	for _, h := range app.Status.History {
		if seen[h.Revision] {
			continue
		}
		seen[h.Revision] = true
		commit := source.CommitOf(h.Revision)
		if h.Revision == to || (len(to) >= 7 && commit != "" && strings.HasPrefix(commit, strings.ToLower(strings.TrimPrefix(to, "sha1:")))) {
			found = append(found, h.Revision)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return "", fmt.Errorf("revision %q is not in the history of Application %s/%s (see gitsync history app %s)", to, app.Namespace, app.Name, app.Name)
	}
	return "", fmt.Errorf("revision %q is ambiguous: %s", to, strings.Join(found, ", "))
}

// pinnedRevision is spec.pinnedRevision.
func pinnedRevision(app *gitsyncv1.Application) string { return app.Spec.PinnedRevision }
