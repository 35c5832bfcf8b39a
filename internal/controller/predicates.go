package controller

import (
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1alpha1"
)

// requestedAtChanged passes updates that set a new gitsync.dev/requested-at value.
type requestedAtChanged struct {
	predicate.Funcs
}

func (requestedAtChanged) Update(e event.UpdateEvent) bool {
	if e.ObjectOld == nil || e.ObjectNew == nil {
		return false
	}
	v, ok := e.ObjectNew.GetAnnotations()[gitsyncv1.RequestedAtAnnotation]
	return ok && v != e.ObjectOld.GetAnnotations()[gitsyncv1.RequestedAtAnnotation]
}
