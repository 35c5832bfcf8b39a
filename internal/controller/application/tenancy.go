package application

import (
	"context"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	"k8s.io/apimachinery/pkg/types"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/controller/kit"
)

// reconcileAccess refuses references to another namespace (spec.sourceRef.namespace,
// spec.dependsOn[].namespace) unless AllowCrossNamespaceRefs: Ready=False/AccessDenied,
// and nothing of the other namespace is read or written. Only a spec change (or the
// operator's flag) can lift it, so it does not requeue.
func (r *Reconciler) reconcileAccess(_ context.Context, s *syncRun) outcome {
	if err := r.checkAccess(s.app); err != nil {
		return stalled(gitsyncv1.AccessDeniedReason, err.Error())
	}
	if conditions.GetReason(s.app, gitsyncv1.StalledCondition) == gitsyncv1.AccessDeniedReason {
		conditions.Delete(s.app, gitsyncv1.StalledCondition)
	}
	return done()
}

// accessError is the refusal of an Application's references (see refusedReference):
// what every path that would read its source or render it returns instead.
type accessError struct{ msg string }

func (e *accessError) Error() string { return e.msg }

// checkAccess is the one access check of an Application's references: nil when it may
// use them, an *accessError otherwise. Every path that reads an Application's source or
// renders it calls it first: the sync (reconcileAccess, the first step), the ownership
// and prune checks of other Applications (renderCurrent) and the restore of drift
// protection (lastAppliedAtHand), so that a refused Application is never rendered, its
// source never read, and nothing of it can answer a question about the other namespace.
func (r *Reconciler) checkAccess(app *gitsyncv1.Application) error {
	if msg := r.refusedReference(app); msg != "" {
		return &accessError{msg: msg}
	}
	return nil
}

// refusedReference returns why the Application may not use its references, or "".
func (r *Reconciler) refusedReference(app *gitsyncv1.Application) string {
	if r.AllowCrossNamespaceRefs {
		return ""
	}
	if msg := refusedCluster(app); msg != "" { // cluster_step.go
		return msg
	}
	for i, src := range app.SourceList() {
		if ns := src.SourceRef.Namespace; ns != "" && ns != app.Namespace {
			field := "sourceRef"
			if app.MultiSource() {
				field = fmt.Sprintf("sources[%d].sourceRef", i)
			}
			return fmt.Sprintf("%s names %s %s/%s in another namespace: cross-namespace references are not allowed (gitsync run --allow-cross-namespace-refs)",
				field, src.SourceRef.Kind, ns, src.SourceRef.Name)
		}
	}
	for _, dep := range app.Spec.DependsOn {
		if dep.Namespace != "" && dep.Namespace != app.Namespace {
			return fmt.Sprintf("dependsOn names Application %s/%s in another namespace: cross-namespace references are not allowed (gitsync run --allow-cross-namespace-refs)",
				dep.Namespace, dep.Name)
		}
	}
	return ""
}

// sourceIndexKeys are the values of kit.ApplicationSourceIndex for an Application: its
// sources (every one of spec.sources), unless a reference is refused (then no source's
// event enqueues it), and the GitRepositories of their helm.valuesFilesFrom (sources.go).
func (r *Reconciler) sourceIndexKeys(app *gitsyncv1.Application) []string {
	for _, src := range app.SourceList() {
		if ns := src.SourceRef.Namespace; ns != "" && ns != app.Namespace && !r.AllowCrossNamespaceRefs {
			return nil
		}
	}
	return append(kit.SourceIndexKeys(app), valuesSourceKeys(app)...)
}

// refreshAsked is a request to a source to fetch a missing checkout again.
type refreshAsked struct {
	revision string
	// waits is how many times the Application looked again since asking.
	waits int
}

const (
	refreshBackoffMax = 5 * time.Minute
)

// askRefresh tells whether to ask the source to fetch revision again (once per
// revision), and how long to wait before looking again: RetryInterval, doubling at
// every look until refreshBackoffMax.
func (r *Reconciler) askRefresh(app types.NamespacedName, revision string) (ask bool, wait time.Duration) {
	r.refreshMu.Lock()
	defer r.refreshMu.Unlock()
	if r.refreshes == nil {
		r.refreshes = map[types.NamespacedName]refreshAsked{}
	}
	prev, ok := r.refreshes[app]
	if !ok || prev.revision != revision {
		r.refreshes[app] = refreshAsked{revision: revision}
		return true, r.retryInterval()
	}
	prev.waits++
	r.refreshes[app] = prev
	return false, kit.Backoff(r.retryInterval(), refreshBackoffMax, prev.waits)
}

// refreshDone forgets the request once the checkout is there.
func (r *Reconciler) refreshDone(app types.NamespacedName) {
	r.refreshMu.Lock()
	defer r.refreshMu.Unlock()
	delete(r.refreshes, app)
}
