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
	if p := in.RequestedPrune(); p != nil {
		return *p
	}
	return in.Spec.Prune
}

// RequestedPrune is what the pending sync request asks of pruning through
// gitsync.dev/sync-prune, or nil.
func (in *Application) RequestedPrune() *bool {
	requested := in.PendingRequest()
	if requested == "" {
		return nil
	}
	v, at, ok := strings.Cut(in.GetAnnotations()[SyncPruneAnnotation], "@")
	if !ok || at != requested || (v != "true" && v != "false") {
		return nil
	}
	prune := v == "true"
	return &prune
}

// PruneRequest is the gitsync.dev/sync-prune value that asks the sync requested at
// requested to prune (or not).
func PruneRequest(prune bool, requested string) string {
	if prune {
		return "true@" + requested
	}
	return "false@" + requested
}
