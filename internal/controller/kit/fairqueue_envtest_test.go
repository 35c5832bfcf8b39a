package kit

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// A controller built as every gitsync controller is (Options.Build, default options: the
// fair queue), 2 workers, against the API server: one namespace has 30 slow reconciles
// queued (a slow render each); an object created in another namespace afterwards is
// reconciled (its result written back through the API server) while most of the flood
// still waits, not after it. With one shared queue (SharedQueue) it came after 30 of 31.
func TestOneNamespaceBacklogDoesNotDelayAnother(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	flood, other := env.Namespace(t), env.Namespace(t)

	skip := true
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: env.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: &skip}})
	g.Expect(err).NotTo(HaveOccurred())
	var mu sync.Mutex
	floodDone := 0
	r := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		cm := &corev1.ConfigMap{}
		if err := mgr.GetClient().Get(ctx, req.NamespacedName, cm); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
		if req.Namespace == flood {
			time.Sleep(300 * time.Millisecond) // a slow render
			mu.Lock()
			floodDone++
			mu.Unlock()
			return reconcile.Result{}, nil
		}
		if cm.Data["synced"] == "" {
			base := client.MergeFrom(cm.DeepCopy())
			mu.Lock()
			cm.Data = map[string]string{"synced": fmt.Sprint(floodDone)}
			mu.Unlock()
			return reconcile.Result{}, mgr.GetClient().Patch(ctx, cm, base)
		}
		return reconcile.Result{}, nil
	})
	ours := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetNamespace() == flood || o.GetNamespace() == other
	})
	b := ctrl.NewControllerManagedBy(mgr).Named("fair-envtest").
		For(&corev1.ConfigMap{}, builder.WithPredicates(ours))
	_, err = Options{MaxConcurrentReconciles: 2}.Build(b, r)
	g.Expect(err).NotTo(HaveOccurred())
	go func() { _ = mgr.Start(ctx) }()

	done := func() int {
		mu.Lock()
		defer mu.Unlock()
		return floodDone
	}
	// Once the controller runs (its informer listed), the flood: created objects, queued
	// at the priority of a create (an initial list's objects would be queued lower).
	g.Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: flood, Name: "first"}})).To(Succeed())
	g.Eventually(done).WithTimeout(time.Minute).WithPolling(50 * time.Millisecond).Should(Equal(1))
	for i := range 30 {
		g.Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: flood, Name: fmt.Sprintf("app-%02d", i)}})).To(Succeed())
	}
	g.Eventually(done).WithTimeout(time.Minute).WithPolling(50 * time.Millisecond).Should(BeNumerically(">=", 3))
	g.Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "app"}})).To(Succeed())

	var synced string
	g.Eventually(func(g Gomega) {
		cm := &corev1.ConfigMap{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: other, Name: "app"}, cm)).To(Succeed())
		synced = cm.Data["synced"]
		g.Expect(synced).NotTo(BeEmpty())
	}).WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
	var before int
	_, _ = fmt.Sscan(synced, &before)
	t.Logf("the other namespace's object was reconciled after %d of the flood's 31", before)
	// The flood's reconciles done or running when it was queued (the watch's delivery
	// takes a moment), not most of the 31.
	g.Expect(before).To(BeNumerically("<", 12), "served after %d of the flood's 31", before)
}

// The same through controller-runtime's own controller with a channel source (no API
// server): each worker takes the other namespace's request at its next turn.
func TestFairQueueInAController(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var order []string
	r := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		if req.Namespace == "a" {
			time.Sleep(200 * time.Millisecond)
		}
		mu.Lock()
		order = append(order, req.String())
		mu.Unlock()
		return reconcile.Result{}, nil
	})
	skip := true
	c, err := controller.NewUnmanaged("fair-queue-test", controller.Options{Reconciler: r, MaxConcurrentReconciles: 2,
		NewQueue: NewQueue(false), SkipNameValidation: &skip})
	g.Expect(err).NotTo(HaveOccurred())
	events := make(chan event.GenericEvent, 20)
	g.Expect(c.Watch(source.Channel(events, &handler.EnqueueRequestForObject{}))).To(Succeed())
	obj := func(ns, name string) client.Object {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	for i := range 15 {
		events <- event.GenericEvent{Object: obj("a", fmt.Sprintf("app-%d", i))}
	}
	events <- event.GenericEvent{Object: obj("b", "app")}
	go func() { _ = c.Start(ctx) }()
	g.Eventually(func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), order...)
	}).WithTimeout(time.Minute).WithPolling(50 * time.Millisecond).Should(ContainElement("b/app"))
	mu.Lock()
	defer mu.Unlock()
	g.Expect(len(order)).To(BeNumerically("<=", 3), "b/app was served after most of a's queue: %v", order)
}
