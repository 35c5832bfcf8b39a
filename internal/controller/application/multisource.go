package application

import (
	"context"
	"strings"

	"k8s.io/utils/ptr"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// sourcePart is one source of an Application with spec.sources, as a sync reads it.
type sourcePart struct {
	// label names it in messages: "sources[1] (GitRepository/b)".
	label string
	// app is the Application as it renders this source alone (Application.ForSource).
	app *gitsyncv1.Application
	// dir is the checkout (or chart archive) of revision; revision is the source's own.
	dir, revision string
	// signer is the revision's verified signer, when the source verifies one.
	signer string
}

// reconcileSources is reconcileSource for spec.sources: every source's artifact is found
// (and its checkout, or its chart's archive) exactly as for a single source, one after
// the other; the first that is not there stops the steps with its own reason and a
// message that names it ("sources[1] (GitRepository/b): …"). The revision is every
// source's, joined (gitsyncv1.JoinRevisions). With autoSync off, a new revision of any
// source waits for a sync request. spec.pinnedRevision is refused: a rollback would pin
// one commit for several sources.
func (r *Reconciler) reconcileSources(ctx context.Context, s *syncRun) outcome {
	app := s.app
	if app.Spec.PinnedRevision != "" {
		return stalled(gitsyncv1.BuildFailedReason,
			"spec.pinnedRevision is not supported with spec.sources: rollback of a multi-source Application is not supported")
	}
	s.parts = s.parts[:0]
	entries := make([]string, 0, len(app.Spec.Sources))
	var signers []string
	for i, src := range app.Spec.Sources {
		view := app.ForSource(i)
		// The view's own steps neither wait for a sync request nor pin: this step
		// decides both for the joined revision.
		view.Spec.AutoSync, view.Spec.PinnedRevision = ptr.To(true), ""
		one := &syncRun{app: view, log: s.log, started: s.started}
		out := r.reconcileSource(ctx, one)
		if out.kind != stepDone {
			if out.reason == "" {
				// e.g. a chart download going on: the view said so in its conditions.
				app.Status.Conditions = view.Status.Conditions
			}
			if out.message != "" {
				out.message = app.SourceLabel(i) + ": " + out.message
			}
			return out
		}
		s.parts = append(s.parts, sourcePart{label: app.SourceLabel(i), app: view, dir: one.dir, revision: one.revision,
			signer: one.signer})
		entries = append(entries, gitsyncv1.SourceRevision(app.SourceName(src.SourceRef), one.revision))
		if one.signer != "" && !strings.Contains(strings.Join(signers, ", "), one.signer) {
			signers = append(signers, one.signer)
		}
	}
	s.revision = gitsyncv1.JoinRevisions(entries)
	s.signer = strings.Join(signers, ", ")
	if awaitingSyncRequest(s) {
		return waitFor(0, "", "")
	}
	return done()
}

// acquireParts keeps the checkouts of every source from GC until release is called.
func (s *syncRun) acquireParts(storage Checkouts) (release func()) {
	var releases []func()
	for _, p := range s.parts {
		releases = append(releases, storage.Acquire(p.dir))
	}
	return func() {
		for _, rel := range releases {
			rel()
		}
	}
}
