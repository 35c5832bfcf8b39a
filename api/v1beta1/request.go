package v1beta1

import "strings"

// PendingRequest is the value of gitsync.dev/requested-at when it asks for a sync not
// handled yet (status.lastHandledReconcileAt differs), else "".
func (in *Application) PendingRequest() string {
	requested := in.GetAnnotations()[RequestedAtAnnotation]
	if requested == in.Status.LastHandledReconcileAt {
		return ""
	}
	return requested
}

// Prunes tells whether a sync now deletes what left Git: spec.prune, unless the pending
// sync request says otherwise through gitsync.dev/sync-prune.
func (in *Application) Prunes() bool {
	if requested := in.PendingRequest(); requested != "" {
		v, at, ok := strings.Cut(in.GetAnnotations()[SyncPruneAnnotation], "@")
		if ok && at == requested && (v == "true" || v == "false") {
			return v == "true"
		}
	}
	return in.Spec.Prune
}

// PruneRequest is the gitsync.dev/sync-prune value that asks the sync requested at
// requested to prune (or not).
func PruneRequest(prune bool, requested string) string {
	if prune {
		return "true@" + requested
	}
	return "false@" + requested
}
