package kit

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// While a restart's initial list fills the queue, a push (a new requested-at, then the
// source's next revision) is served first; a source's first artifact is part of the
// cold start and waits its turn.
func TestPushesGoBeforeTheColdBacklog(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	repo := func(name, rv string) *gitsyncv1.GitRepository {
		return &gitsyncv1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
	}
	next := func(q priorityqueue.PriorityQueue[reconcile.Request]) (string, int) {
		req, p, _ := q.GetWithPriority()
		q.Done(req)
		return req.Name, p
	}
	// The backlog: objects of the initial list, and objects created since, which go
	// through the controller's For handler and are offered to the RequestedNow watch
	// too (whose predicate must not take a new object for a request).
	backlog := func(q priorityqueue.PriorityQueue[reconcile.Request]) {
		h := &handler.EnqueueRequestForObject{}
		for i := range 50 {
			h.Create(ctx, event.CreateEvent{Object: repo(fmt.Sprintf("cold-%02d", i), "1"), IsInInitialList: true}, q)
		}
		high := prioritized[client.Object](HighPriority, &handler.EnqueueRequestForObject{})
		for i := range 50 {
			e := event.CreateEvent{Object: repo(fmt.Sprintf("created-%02d", i), "1")}
			h.Create(ctx, e, q)
			if (RequestedAtChanged{}).Create(e) {
				high.Create(ctx, e, q)
			}
		}
	}

	// The GitRepository controller: the webhook sets requested-at.
	q := priorityqueue.New[reconcile.Request]("test-repos")
	defer q.ShutDown()
	backlog(q)
	old, pushed := repo("hot", "1"), repo("hot", "2")
	pushed.Annotations = map[string]string{gitsyncv1.RequestedAtAnnotation: "push"}
	if (RequestedAtChanged{}).Update(event.UpdateEvent{ObjectOld: old, ObjectNew: pushed}) {
		prioritized[client.Object](HighPriority, &handler.EnqueueRequestForObject{}).
			Update(ctx, event.UpdateEvent{ObjectOld: old, ObjectNew: pushed}, q)
	}
	name, p := next(q)
	g.Expect(name).To(Equal("hot"))
	g.Expect(p).To(Equal(HighPriority))
	name, p = next(q)
	g.Expect(name).To(Equal("created-00"))
	g.Expect(p).To(Equal(0))

	// The Application controller: the source's artifact moves to the pushed revision;
	// another source gets its first artifact.
	toApp := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "app-" + o.GetName()}}}
	})
	h := NewRevisionFirst(toApp)
	q = priorityqueue.New[reconcile.Request]("test-apps")
	defer q.ShutDown()
	backlog(q)
	first, firstArtifact := repo("new", "1"), repo("new", "2")
	firstArtifact.Status.Artifact = &gitsyncv1.Artifact{Revision: "main@sha1:1"}
	h.Update(ctx, event.UpdateEvent{ObjectOld: first, ObjectNew: firstArtifact}, q)
	before, after := repo("hot", "2"), repo("hot", "3")
	before.Status.Artifact = &gitsyncv1.Artifact{Revision: "main@sha1:1"}
	after.Status.Artifact = &gitsyncv1.Artifact{Revision: "main@sha1:2"}
	h.Update(ctx, event.UpdateEvent{ObjectOld: before, ObjectNew: after}, q)
	var order []string
	for range 3 {
		name, p := next(q)
		order = append(order, fmt.Sprintf("%s@%d", name, p))
	}
	g.Expect(order).To(Equal([]string{"app-hot@100", "created-00@0", "created-01@0"}))
}
