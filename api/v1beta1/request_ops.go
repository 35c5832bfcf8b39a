package v1beta1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RequestReconcile sets gitsync.dev/requested-at on obj (a GitRepository, HelmRepository
// or Application) to now and returns the value: its controller reconciles it at once and
// records the value in status.lastHandledReconcileAt when it has handled the request.
// This is the one writer of the annotation; the caller patches obj.
func RequestReconcile(obj metav1.Object, now time.Time) string {
	requested := now.UTC().Format(time.RFC3339Nano)
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[RequestedAtAnnotation] = requested
	obj.SetAnnotations(ann)
	return requested
}

// RequestSync requests a sync of the Application now (RequestReconcile); runHooks also
// runs its hooks again (gitsync.dev/run-hooks), and prune, when not nil, prunes (or not)
// in this sync only (gitsync.dev/sync-prune). It returns the request's value.
func (in *Application) RequestSync(now time.Time, runHooks bool, prune *bool) string {
	requested := RequestReconcile(in, now)
	if runHooks {
		in.Annotations[RunHooksAnnotation] = requested
	}
	if prune != nil {
		in.Annotations[SyncPruneAnnotation] = PruneRequest(*prune, requested)
	}
	return requested
}
