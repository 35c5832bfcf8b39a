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
	"github.com/gitsync-dev/gitsync/internal/source"
)

// transientReasons of Ready=False that wait keeps waiting through, besides the states
// an Application only reports (gitsyncv1.ReportedOnly).
var transientReasons = map[string]bool{
	gitsyncv1.ProgressingReason:        true,
	gitsyncv1.DependencyNotReadyReason: true,
	gitsyncv1.ArtifactNotReadyReason:   true,
	gitsyncv1.SyncWindowClosedReason:   true, // the revision waits for the window's end
}

func (o *options) newWaitCommand() *cobra.Command {
	var forWhat, revision string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "wait app NAME --for synced|healthy|ready [--timeout D]",
		Short: "Wait (a watch) until an Application is synced, healthy or ready at a revision; fail fast when that revision failed",
		Long: `Wait judges one revision: --revision R (a full revision, a commit SHA or a prefix
of one), or else the newest revision the Application should be at when the wait
starts (its pin, or its source's artifact). A failure of an older revision never
ends the wait; the wait fails when the awaited revision failed (or is Degraded),
or at --timeout. See docs/status.md.`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: o.completeAppName,
		RunE: func(cmd *cobra.Command, args []string) error {
			if k, err := parseKind(args[0]); err != nil || k != kindApp {
				return fmt.Errorf("wait works on apps: gitsync wait app NAME --for synced")
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
			awaited := awaitedRevision{want: revision}
			if revision == "" {
				if awaited, err = newestRevision(ctx, c, client.ObjectKey{Namespace: ns, Name: args[1]}); err != nil {
					return err
				}
			}
			goal, err := waitGoal(forWhat, awaited)
			if err != nil {
				return err
			}
			var last *gitsyncv1.Application
			obj, err := operations.WaitFor(ctx, c, operations.App, client.ObjectKey{Namespace: ns, Name: args[1]}, func(obj client.Object) (bool, error) {
				last = obj.(*gitsyncv1.Application)
				return goal(last)
			})
			if err != nil {
				if ctx.Err() != nil && last != nil {
					return fmt.Errorf("%w waiting for Application %s/%s to be %s%s; last seen: %s", err, ns, args[1], forWhat, awaited, lastSeen(last))
				}
				if revision == "" && awaited.want != "" {
					// The source may not have fetched a commit pushed a moment ago.
					return fmt.Errorf("%w\n(judged %s, the newest revision the source had when the wait started; to wait for a commit you just pushed: --revision <commit>)", err, awaited.want)
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
	cmd.Flags().StringVar(&revision, "revision", "", "the revision to wait for: a full revision, a commit SHA or a prefix of one (default: the newest the Application should be at)")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait")
	return cmd
}

// awaitedRevision is the revision a wait judges: want is --revision (a full revision, a
// commit SHA or a prefix of one) or the newest revision the Application should be at;
// empty when that is not known (a source without an artifact yet, a HelmRepository):
// then the Application's own revisions are judged as they come.
type awaitedRevision struct {
	want string
}

// matches tells whether revision is the awaited one: the same revision, or a Git
// revision whose commit (source.CommitOf) starts with want's hex digits (at least 4);
// for a revision of several sources, whose commit of one of them does.
func (a awaitedRevision) matches(revision string) bool {
	if a.want == "" {
		return true
	}
	if revision == a.want {
		return true
	}
	want := strings.ToLower(a.want)
	if i := strings.LastIndex(want, "sha1:"); i >= 0 {
		want = want[i+len("sha1:"):]
	}
	if len(want) < 4 || strings.Trim(want, "0123456789abcdef") != "" {
		return false
	}
	// With spec.sources, the commit of any of its Git sources.
	for _, e := range gitsyncv1.SplitRevision(revision) {
		if commit := source.CommitOf(e.Revision); commit != "" && strings.HasPrefix(commit, want) {
			return true
		}
	}
	return false
}

func (a awaitedRevision) String() string {
	if a.want == "" {
		return ""
	}
	return " at " + a.want
}

// newestRevision is the revision an Application should be at now: its pin (a rollback),
// else its GitRepository's artifact, or with spec.sources every source's joined, when
// every source is a GitRepository.
func newestRevision(ctx context.Context, c client.Reader, key client.ObjectKey) (awaitedRevision, error) {
	app := &gitsyncv1.Application{}
	if err := c.Get(ctx, key, app); err != nil {
		return awaitedRevision{}, notFoundOr(err, kindApp, key.Namespace, key.Name)
	}
	if app.Spec.PinnedRevision != "" {
		return awaitedRevision{want: app.Spec.PinnedRevision}, nil
	}
	var entries []string
	newest := ""
	for _, s := range app.SourceList() {
		if s.SourceRef.Kind != gitsyncv1.GitRepositoryKind {
			return awaitedRevision{}, nil
		}
		src := client.ObjectKey{Namespace: s.SourceRef.Namespace, Name: s.SourceRef.Name}
		if src.Namespace == "" {
			src.Namespace = app.Namespace
		}
		repo := &gitsyncv1.GitRepository{}
		if err := c.Get(ctx, src, repo); err != nil || repo.Status.Artifact == nil {
			// No source (yet) or no artifact: the Application's own status says why.
			return awaitedRevision{}, nil
		}
		newest = repo.Status.Artifact.Revision
		entries = append(entries, gitsyncv1.SourceRevision(app.SourceName(s.SourceRef), newest))
	}
	if !app.MultiSource() {
		return awaitedRevision{want: newest}, nil
	}
	return awaitedRevision{want: gitsyncv1.JoinRevisions(entries)}, nil
}

// waitGoal returns the check for --for at the awaited revision: done when reached, an
// error when that revision cannot get there without a change (it failed, or is
// Degraded). What an older revision did never ends the wait.
func waitGoal(forWhat string, awaited awaitedRevision) (func(*gitsyncv1.Application) (bool, error), error) {
	var reached func(*gitsyncv1.Application) bool
	switch forWhat {
	case "synced":
		reached = func(a *gitsyncv1.Application) bool {
			return a.Status.Sync != nil && a.Status.Sync.Status == gitsyncv1.SyncStatusSynced && awaited.matches(a.Status.Sync.Revision)
		}
	case "healthy":
		reached = func(a *gitsyncv1.Application) bool {
			return a.Status.Health != nil && a.Status.Health.Status == gitsyncv1.HealthStatusHealthy &&
				awaited.matches(a.Status.LastAppliedRevision)
		}
	case "ready":
		reached = func(a *gitsyncv1.Application) bool {
			return apimeta.IsStatusConditionTrue(a.Status.Conditions, gitsyncv1.ReadyCondition) &&
				awaited.matches(a.Status.LastAppliedRevision)
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
		if a.Status.Health != nil && a.Status.Health.Status == gitsyncv1.HealthStatusDegraded && awaited.matches(a.Status.LastAppliedRevision) {
			return false, fmt.Errorf("Application %s/%s is Degraded: %s", a.Namespace, a.Name, a.Status.Health.Message)
		}
		if c := apimeta.FindStatusCondition(a.Status.Conditions, gitsyncv1.ReadyCondition); c != nil &&
			c.Status == metav1.ConditionFalse && !transientReasons[c.Reason] && !gitsyncv1.ReportedOnly(c.Reason) && awaited.matches(a.Status.LastAttemptedRevision) {
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
