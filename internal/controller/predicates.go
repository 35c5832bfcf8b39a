package controller

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1alpha1"
	"github.com/gitsync-dev/gitsync/internal/shard"
)

// inShard passes the events of objects that s owns (all of them without sharding); an
// update passes when its new version is owned.
func inShard(s shard.Shard) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool { return s.Owns(o) })
}

// updatesOnly passes no create, delete or generic event: the predicates that embed it
// judge updates only. (predicate.Funcs passes every event it has no function for: a
// watch of its own, such as requestedNow's, would take each new object for a request.)
type updatesOnly struct{}

func (updatesOnly) Create(event.CreateEvent) bool   { return false }
func (updatesOnly) Delete(event.DeleteEvent) bool   { return false }
func (updatesOnly) Generic(event.GenericEvent) bool { return false }

// enteredShard passes the update that moves an object into the shard (its
// gitsync.dev/shard label changed), so that the new owner takes it up at once.
type enteredShard struct {
	updatesOnly
	shard shard.Shard
}

func (p enteredShard) Update(e event.UpdateEvent) bool {
	return e.ObjectOld != nil && e.ObjectNew != nil && !p.shard.Owns(e.ObjectOld) && p.shard.Owns(e.ObjectNew)
}

// requestedAtChanged passes updates that set a new gitsync.dev/requested-at value.
type requestedAtChanged struct {
	updatesOnly
}

func (requestedAtChanged) Update(e event.UpdateEvent) bool {
	if e.ObjectOld == nil || e.ObjectNew == nil {
		return false
	}
	v, ok := e.ObjectNew.GetAnnotations()[gitsyncv1.RequestedAtAnnotation]
	return ok && v != e.ObjectOld.GetAnnotations()[gitsyncv1.RequestedAtAnnotation]
}
