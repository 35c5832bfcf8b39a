package kit

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/shard"
)

// InShard passes the events of objects that s owns (all of them without sharding); an
// update passes when its new version is owned.
func InShard(s shard.Shard) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool { return s.Owns(o) })
}

// UpdatesOnly passes no create, delete or generic event: the predicates that embed it
// judge updates only. (predicate.Funcs passes every event it has no function for: a
// watch of its own, such as RequestedNow's, would take each new object for a request.)
type UpdatesOnly struct{}

func (UpdatesOnly) Create(event.CreateEvent) bool   { return false }
func (UpdatesOnly) Delete(event.DeleteEvent) bool   { return false }
func (UpdatesOnly) Generic(event.GenericEvent) bool { return false }

// EnteredShard passes the update that moves an object into the shard (its
// gitsync.dev/shard label changed), so that the new owner takes it up at once.
type EnteredShard struct {
	UpdatesOnly
	Shard shard.Shard
}

func (p EnteredShard) Update(e event.UpdateEvent) bool {
	return e.ObjectOld != nil && e.ObjectNew != nil && !p.Shard.Owns(e.ObjectOld) && p.Shard.Owns(e.ObjectNew)
}

// RequestedAtChanged passes updates that set a new gitsync.dev/requested-at value.
type RequestedAtChanged struct {
	UpdatesOnly
}

func (RequestedAtChanged) Update(e event.UpdateEvent) bool {
	if e.ObjectOld == nil || e.ObjectNew == nil {
		return false
	}
	v, ok := e.ObjectNew.GetAnnotations()[gitsyncv1.RequestedAtAnnotation]
	return ok && v != e.ObjectOld.GetAnnotations()[gitsyncv1.RequestedAtAnnotation]
}
