package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/operations"
)

// transientReasons of Ready=False that wait keeps waiting through.
var transientReasons = map[string]bool{
	gitsyncv1.ProgressingReason:        true,
	gitsyncv1.DependencyNotReadyReason: true,
	gitsyncv1.ArtifactNotReadyReason:   true,
}

func (o *options) newWaitCommand() *cobra.Command {
	var forWhat string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:               "wait app NAME --for synced|healthy|ready [--timeout D]",
		Short:             "Wait (a watch) until an Application is synced, healthy or ready; fail fast when it is Degraded or its sync failed",
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: o.completeAppName,
		RunE: func(cmd *cobra.Command, args []string) error {
			if k, err := parseKind(args[0]); err != nil || k != kindApp {
				return fmt.Errorf("wait works on apps: gitsync wait app NAME --for synced")
			}
			goal, err := waitGoal(forWhat)
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
			ctx, cancel := context.WithTimeoutCause(cmd.Context(), timeout, fmt.Errorf("timed out after %s", timeout))
			defer cancel()
			var last *gitsyncv1.Application
			obj, err := operations.WaitFor(ctx, c, operations.App, client.ObjectKey{Namespace: ns, Name: args[1]}, func(obj client.Object) (bool, error) {
				last = obj.(*gitsyncv1.Application)
				return goal(last)
			})
			if err != nil {
				if ctx.Err() != nil && last != nil {
					return fmt.Errorf("%w waiting for Application %s/%s to be %s; last seen: %s", err, ns, args[1], forWhat, lastSeen(last))
				}
				return err
			}
			app := obj.(*gitsyncv1.Application)
			fmt.Fprintf(o.Out, "Application %s/%s is %s (revision %s)\n", app.Namespace, app.Name, forWhat, app.Status.LastAppliedRevision)
			return nil
		},
	}
	cmd.Flags().StringVar(&forWhat, "for", "ready", "synced, healthy or ready")
	_ = cmd.RegisterFlagCompletionFunc("for", completeFixed("synced", "healthy", "ready"))
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait")
	return cmd
}

// waitGoal returns the check for --for: done when reached, an error when it cannot be
// reached without a change (Degraded health, a failed sync, Stalled).
func waitGoal(forWhat string) (func(*gitsyncv1.Application) (bool, error), error) {
	var reached func(*gitsyncv1.Application) bool
	switch forWhat {
	case "synced":
		reached = func(a *gitsyncv1.Application) bool {
			return a.Status.Sync != nil && a.Status.Sync.Status == gitsyncv1.SyncStatusSynced
		}
	case "healthy":
		reached = func(a *gitsyncv1.Application) bool {
			return a.Status.Health != nil && a.Status.Health.Status == gitsyncv1.HealthStatusHealthy
		}
	case "ready":
		reached = func(a *gitsyncv1.Application) bool {
			return apimeta.IsStatusConditionTrue(a.Status.Conditions, gitsyncv1.ReadyCondition)
		}
	default:
		return nil, fmt.Errorf("--for %q: use synced, healthy or ready", forWhat)
	}
	return func(a *gitsyncv1.Application) (bool, error) {
		if a.Spec.Suspend {
			// A suspended Application's status does not move.
			return false, fmt.Errorf("Application %s/%s is suspended (gitsync resume app %s)", a.Namespace, a.Name, a.Name)
		}
		if a.Status.ObservedGeneration != a.Generation {
			return false, nil
		}
		if reached(a) {
			return true, nil
		}
		if a.Status.Health != nil && a.Status.Health.Status == gitsyncv1.HealthStatusDegraded {
			return false, fmt.Errorf("Application %s/%s is Degraded: %s", a.Namespace, a.Name, a.Status.Health.Message)
		}
		if c := apimeta.FindStatusCondition(a.Status.Conditions, gitsyncv1.ReadyCondition); c != nil &&
			c.Status == metav1.ConditionFalse && !transientReasons[c.Reason] {
			return false, fmt.Errorf("Application %s/%s failed: %s: %s", a.Namespace, a.Name, c.Reason, c.Message)
		}
		return false, nil
	}, nil
}

// lastSeen says what an Application's status showed when a wait gave up: sync, health,
// Ready, and the drift that keeps it out of sync (objects, fields and writers).
func lastSeen(a *gitsyncv1.Application) string {
	var parts []string
	if a.Status.Sync != nil {
		parts = append(parts, fmt.Sprintf("sync %s at %s", a.Status.Sync.Status, a.Status.Sync.Revision))
	}
	if a.Status.Health != nil {
		parts = append(parts, "health "+a.Status.Health.Status)
	}
	if c := apimeta.FindStatusCondition(a.Status.Conditions, gitsyncv1.ReadyCondition); c != nil {
		parts = append(parts, fmt.Sprintf("Ready=%s (%s: %s)", c.Status, c.Reason, c.Message))
	}
	for _, d := range a.Status.Drift {
		parts = append(parts, fmt.Sprintf("drift %s: %s by %s", d.Object, strings.Join(d.Fields, ", "), managersOr(d.Managers)))
	}
	if len(parts) == 0 {
		return "no status yet"
	}
	return strings.Join(parts, "; ")
}

func managersOr(managers []string) string {
	if len(managers) == 0 {
		return "an unknown writer"
	}
	return strings.Join(managers, ", ")
}
