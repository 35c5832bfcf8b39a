package operations

import (
	"context"
	"fmt"
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/sourceid"
)

// StepType says what a Step of a reconcile reports.
type StepType string

const (
	// Requested: the request is set on the object.
	Requested StepType = "requested"
	// Waiting: the Application's sync took the request and waits (for a hook or a wave).
	Waiting StepType = "waiting"
	// Handled: the object handled the request and did not fail.
	Handled StepType = "handled"
	// Pinned: a rollback pinned the Application to the revision in Message.
	Pinned StepType = "pinned"
)

// Step is one thing a reconcile did, in order.
type Step struct {
	Type StepType
	Kind Kind
	Key  client.ObjectKey
	// Message is, for Waiting, what the sync waits for (its Reconciling message); for
	// Pinned, the revision.
	Message string
	// Object is, for Handled, the object as it handled the request.
	Object client.Object
	// Syncs are, for a Handled Application, the syncs this request ran, newest first
	// (none: the sync changed nothing, so it wrote no history entry).
	Syncs []gitsyncv1.SyncHistoryEntry
}

// String is the step as one line for a person.
func (s Step) String() string {
	switch s.Type {
	case Requested:
		return fmt.Sprintf("► reconcile of %s %s requested", s.Kind.Name(), s.Key)
	case Waiting:
		return "◎ waiting for the sync: " + s.Message
	case Pinned:
		return fmt.Sprintf("Application %s pinned to %s; newer commits are not applied until `gitsync resume app %s`", s.Key, s.Message, s.Key.Name)
	}
	var b strings.Builder
	switch o := s.Object.(type) {
	case *gitsyncv1.GitRepository:
		fmt.Fprintf(&b, "✔ %s %s: revision %s", s.Kind.Name(), s.Key, artifactRevision(o.Status.Artifact))
	case *gitsyncv1.HelmRepository:
		fmt.Fprintf(&b, "✔ %s %s: index %s", s.Kind.Name(), s.Key, artifactRevision(o.Status.Artifact))
	case *gitsyncv1.OCIRepository:
		rev := "none"
		if o.Status.Artifact != nil {
			rev = o.Status.Artifact.Revision
		}
		fmt.Fprintf(&b, "✔ %s %s: revision %s", s.Kind.Name(), s.Key, rev)
	case *gitsyncv1.Application:
		sel := o.Status.SelectiveSync
		if h := s.Syncs; len(h) > 0 {
			fmt.Fprintf(&b, "✔ %s %s: applied revision %s (%d created, %d configured, %d unchanged, %d pruned)",
				s.Kind.Name(), s.Key, h[0].Revision, h[0].Created, h[0].Configured, h[0].Unchanged, h[0].Pruned)
		} else if sel != nil && sel.Revision != o.Status.LastAppliedRevision {
			// A selective sync writes no history entry: the rest of the revision is not applied.
			fmt.Fprintf(&b, "✔ %s %s: applied %s of revision %s; the rest stays at %s (OutOfSync)",
				s.Kind.Name(), s.Key, strings.Join(sel.Objects, ", "), sel.Revision, o.Status.LastAppliedRevision)
		} else {
			fmt.Fprintf(&b, "✔ %s %s: up to date, no changes (applied revision %s)", s.Kind.Name(), s.Key, o.Status.LastAppliedRevision)
		}
		if o.Status.Health != nil {
			fmt.Fprintf(&b, ", health %s", o.Status.Health.Status)
		}
	}
	return b.String()
}

func artifactRevision(a *gitsyncv1.Artifact) string {
	if a == nil {
		return "-"
	}
	return a.Revision
}

// Reconcile requests a reconcile of the object of kind k at key (with opts.WithSource,
// of an Application's source first), waits until it is handled, and reports each step
// to report (nil: discarded). It fails when the object is suspended, or its Ready
// condition is False once handled.
func Reconcile(ctx context.Context, c client.WithWatch, k Kind, key client.ObjectKey, opts SyncOptions, report func(Step)) error {
	if report == nil {
		report = func(Step) {}
	}
	if k != App {
		_, err := request(ctx, c, k, key, opts, nil, report)
		return err
	}
	// The history before the request: what the request did is what is newer.
	app, err := GetApp(ctx, c, key)
	if err != nil {
		return err
	}
	before := app.Status.History
	if !opts.WithSource {
		_, err := request(ctx, c, App, key, opts, before, report)
		return err
	}
	if app.MultiSource() {
		// Each source's reconcile first, one after the other, then the Application's.
		for i := range app.Spec.Sources {
			view := app.ForSource(i)
			if _, err := request(ctx, c, SourceKind(view), sourceid.Key(view), opts, nil, report); err != nil {
				return err
			}
		}
		_, err := request(ctx, c, App, key, opts, before, report)
		return err
	}
	srcKey, srcKind := sourceid.Key(app), SourceKind(app)
	indexBefore := helmIndex(ctx, c, srcKind, srcKey)
	src, err := request(ctx, c, srcKind, srcKey, opts, nil, report)
	if err != nil {
		return err
	}
	// The controller reads the source from its cache, which may not hold the new
	// artifact yet when it handles the request: ask again (a few times at most) until
	// the Application has handled the source's revision. A HelmRepository's artifact is
	// its index, and the chart version it selects the Application's revision: with a new
	// index, ask again while that revision did not move.
	handled := func(*gitsyncv1.Application) bool { return true }
	switch s := src.(type) {
	case *gitsyncv1.GitRepository:
		if s.Status.Artifact != nil {
			want := s.Status.Artifact.Revision
			handled = func(a *gitsyncv1.Application) bool { return a.Status.LastAttemptedRevision == want }
		}
	case *gitsyncv1.OCIRepository:
		if s.Status.Artifact != nil {
			want := s.Status.Artifact.Revision
			handled = func(a *gitsyncv1.Application) bool { return a.Status.LastAttemptedRevision == want }
		}
	case *gitsyncv1.HelmRepository:
		if s.Status.Artifact != nil && s.Status.Artifact.Digest != indexBefore {
			attempted := app.Status.LastAttemptedRevision
			handled = func(a *gitsyncv1.Application) bool { return a.Status.LastAttemptedRevision != attempted }
		}
	}
	var last Step
	quiet := func(s Step) {
		if s.Type == Handled {
			last = s
			return
		}
		report(s)
	}
	for i := 0; ; i++ {
		obj, err := request(ctx, c, App, key, opts, before, quiet)
		if err != nil {
			return err
		}
		if handled(obj.(*gitsyncv1.Application)) || i == 2 {
			report(last)
			return nil
		}
	}
}

// Rollback pins the Application at key to the revision of its history that to names
// (Pin), requests its sync, waits until it is handled and reports each step.
func Rollback(ctx context.Context, c client.WithWatch, key client.ObjectKey, to string, report func(Step)) error {
	if report == nil {
		report = func(Step) {}
	}
	app, err := GetApp(ctx, c, key)
	if err != nil {
		return err
	}
	before := app.Status.History
	_, rev, err := Pin(ctx, c, key, to)
	if err != nil {
		return err
	}
	report(Step{Type: Pinned, Kind: App, Key: key, Message: rev})
	_, err = request(ctx, c, App, key, SyncOptions{}, before, report)
	return err
}

// helmIndex is the digest of the index of a HelmRepository source now ("" for a
// GitRepository, or when it cannot be read).
func helmIndex(ctx context.Context, c client.Client, k Kind, key client.ObjectKey) string {
	repo := &gitsyncv1.HelmRepository{}
	if k != HelmRepository || c.Get(ctx, key, repo) != nil || repo.Status.Artifact == nil {
		return ""
	}
	return repo.Status.Artifact.Digest
}

// request requests a reconcile of one object, waits for it to be handled (and for an
// Application's sync to end), reports Requested, Waiting and Handled, and fails when it
// failed. before is an Application's history before the first request.
func request(ctx context.Context, c client.WithWatch, k Kind, key client.ObjectKey, opts SyncOptions,
	before []gitsyncv1.SyncHistoryEntry, report func(Step)) (client.Object, error) {
	_, requested, err := Request(ctx, c, k, key, opts)
	if err != nil {
		return nil, err
	}
	report(Step{Type: Requested, Kind: k, Key: key})
	obj, err := WaitFor(ctx, c, k, key, func(o client.Object) (bool, error) {
		return handledAt(o) == requested, nil
	})
	if err != nil {
		return nil, err
	}
	if app, ok := obj.(*gitsyncv1.Application); ok && app.Status.SyncProgress != nil {
		// The sync took the request and waits (for a hook or a wave) between
		// reconciles: its outcome comes when it ends.
		msg := ""
		if c := apimeta.FindStatusCondition(app.Status.Conditions, gitsyncv1.ReconcilingCondition); c != nil {
			msg = c.Message
		}
		report(Step{Type: Waiting, Kind: k, Key: key, Message: msg})
		if obj, err = WaitFor(ctx, c, k, key, func(o client.Object) (bool, error) {
			return o.(*gitsyncv1.Application).Status.SyncProgress == nil, nil
		}); err != nil {
			return nil, err
		}
	}
	// Drift left alone and objects a no-prune sync kept are reported, not a failure.
	if ready := Ready(obj); ready != nil && ready.Status == metav1.ConditionFalse && !gitsyncv1.ReportedOnly(ready.Reason) {
		return nil, fmt.Errorf("%s %s failed: %s: %s", k.Name(), key, ready.Reason, ready.Message)
	}
	step := Step{Type: Handled, Kind: k, Key: key, Object: obj}
	if app, ok := obj.(*gitsyncv1.Application); ok {
		step.Syncs = NewSyncs(app.Status.History, before)
	}
	report(step)
	return obj, nil
}

// NewSyncs are the entries of history newer than the newest of before (history read
// before a request), newest first: the syncs that ran since.
func NewSyncs(history, before []gitsyncv1.SyncHistoryEntry) []gitsyncv1.SyncHistoryEntry {
	if len(before) == 0 {
		return history
	}
	last := before[0]
	for i, h := range history {
		if h.Revision == last.Revision && h.Result == last.Result && h.StartedAt.Equal(&last.StartedAt) {
			return history[:i]
		}
	}
	return history
}

// Ready is obj's Ready condition (a GitRepository's, HelmRepository's or
// Application's), or nil.
func Ready(obj client.Object) *metav1.Condition {
	if g, ok := obj.(interface{ GetConditions() []metav1.Condition }); ok {
		return apimeta.FindStatusCondition(g.GetConditions(), gitsyncv1.ReadyCondition)
	}
	return nil
}
