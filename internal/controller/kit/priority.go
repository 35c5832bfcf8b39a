package kit

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Queue priorities (controller-runtime's priority queue serves higher first; it is on
// by default). Work that someone waits for — a push webhook or a sync request, a new
// revision of a source, drift — goes before the cold backlog: the objects of a
// controller's initial list, which controller-runtime enqueues at handler.LowPriority
// (-100), and routine resyncs.
const (
	HighPriority = 100
	LowPriority  = handler.LowPriority
)

// prioritized enqueues what h enqueues at priority p (when the queue is a priority queue;
// h may still pick a lower one itself, as for resyncs of unchanged objects).
func prioritized[T client.Object](p int, h handler.TypedEventHandler[T, reconcile.Request]) handler.TypedEventHandler[T, reconcile.Request] {
	wrap := func(q queue) queue {
		if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
			return priorityAdder{PriorityQueue: pq, priority: p}
		}
		return q
	}
	return handler.TypedFuncs[T, reconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[T], q queue) { h.Create(ctx, e, wrap(q)) },
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[T], q queue) { h.Update(ctx, e, wrap(q)) },
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[T], q queue) { h.Delete(ctx, e, wrap(q)) },
		GenericFunc: func(ctx context.Context, e event.TypedGenericEvent[T], q queue) {
			h.Generic(ctx, e, wrap(q))
		},
	}
}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// priorityAdder adds at its priority.
type priorityAdder struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	priority int
}

func (a priorityAdder) Add(item reconcile.Request) {
	a.AddWithOpts(priorityqueue.AddOpts{}, item)
}

// AddWithOpts adds at the adder's priority unless the handler chose one.
func (a priorityAdder) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	if o.Priority == nil {
		o.Priority = &a.priority
	}
	a.PriorityQueue.AddWithOpts(o, items...)
}

// RequestedNow enqueues, at high priority, the objects whose gitsync.dev/requested-at
// changed (a push webhook, `gitsync reconcile`): added to a controller next to its
// For, it lifts those requests above the backlog. The For leaves those updates to it
// (NotRequested).
func RequestedNow(b *builder.Builder, obj client.Object) *builder.Builder {
	return b.Watches(obj, prioritized[client.Object](HighPriority, &handler.EnqueueRequestForObject{}), builder.WithPredicates(RequestedAtChanged{}))
}

// NotRequested passes every event but an update that sets a new requested-at, which
// RequestedNow enqueues: a For that took it too would enqueue it a second time while
// the first reconcile runs, and the key would be reconciled again right after it, for
// nothing (for a GitRepository, one more ref listing per webhook delivery).
func NotRequested() predicate.Predicate {
	return predicate.Not[client.Object](RequestedAtChanged{})
}

// ChannelAt is a channel source whose events are enqueued at priority p.
func ChannelAt(ch <-chan event.GenericEvent, p int) source.Source {
	return source.Channel(ch, prioritized[client.Object](p, &handler.EnqueueRequestForObject{}))
}

// NewRevisionFirst enqueues what h enqueues for a source whose artifact changed from
// one revision to another (a push) at high priority; a source's first artifact, part of
// a cold start, keeps the priority h gives it.
func NewRevisionFirst(h handler.EventHandler) handler.EventHandler {
	high := prioritized[client.Object](HighPriority, h)
	return handler.Funcs{
		CreateFunc:  h.Create,
		DeleteFunc:  h.Delete,
		GenericFunc: h.Generic,
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			if ArtifactOf(e.ObjectOld) != nil {
				high.Update(ctx, e, q)
				return
			}
			h.Update(ctx, e, q)
		},
	}
}
