package application

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

func TestRemoteClusterAndRefusal(t *testing.T) {
	app := &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "team"}}
	if _, ok := remoteCluster(app); ok || refusedCluster(app) != "" {
		t.Fatal("no spec.cluster: remote")
	}
	app.Spec.Cluster = &gitsyncv1.ClusterReference{Name: "prod"}
	if key, ok := remoteCluster(app); !ok || key != (types.NamespacedName{Namespace: "team", Name: "prod"}) || refusedCluster(app) != "" {
		t.Fatalf("same namespace: %v %v %q", key, ok, refusedCluster(app))
	}
	app.Spec.Cluster.Namespace = "other"
	if msg := refusedCluster(app); msg == "" {
		t.Fatal("another namespace's Cluster not refused")
	}
	r := &Reconciler{AllowCrossNamespaceRefs: true}
	if r.refusedReference(app) != "" {
		t.Fatal("refused with --allow-cross-namespace-refs")
	}
	if (&Reconciler{}).refusedReference(app) == "" {
		t.Fatal("not refused without --allow-cross-namespace-refs")
	}
}

func TestLastWriter(t *testing.T) {
	at := func(s int) *metav1.Time { tm := metav1.NewTime(time.Unix(int64(s), 0)); return &tm }
	for _, tc := range []struct {
		entries []metav1.ManagedFieldsEntry
		want    string
	}{
		{nil, ""},
		{[]metav1.ManagedFieldsEntry{{Manager: gitsyncv1.FieldManager, Time: at(9)}}, ""},
		{[]metav1.ManagedFieldsEntry{{Manager: "kubectl-edit", Time: at(5)}, {Manager: gitsyncv1.FieldManager, Time: at(9)},
			{Manager: "hpa", Time: at(7)}, {Manager: "kubelet", Subresource: "status", Time: at(8)}}, "hpa"},
	} {
		if got := lastWriter(tc.entries); got != tc.want {
			t.Errorf("lastWriter = %q, want %q", got, tc.want)
		}
	}
}

func TestClusterReadyChanged(t *testing.T) {
	cl := func(gen int64, status metav1.ConditionStatus, reason string, probed int) *gitsyncv1.Cluster {
		c := &gitsyncv1.Cluster{ObjectMeta: metav1.ObjectMeta{Generation: gen}}
		c.Status.ObservedGeneration = gen
		c.Status.LastProbeTime = &metav1.Time{Time: time.Unix(int64(probed), 0)}
		if status != "" {
			c.Status.Conditions = []metav1.Condition{{Type: gitsyncv1.ReadyCondition, Status: status, Reason: reason}}
		}
		return c
	}
	p := clusterReadyChanged{}
	for _, tc := range []struct {
		name       string
		old, new   *gitsyncv1.Cluster
		wantUpdate bool
	}{
		{"a probe with the same result", cl(1, metav1.ConditionTrue, gitsyncv1.ClusterReachableReason, 1), cl(1, metav1.ConditionTrue, gitsyncv1.ClusterReachableReason, 2), false},
		{"unreachable", cl(1, metav1.ConditionTrue, gitsyncv1.ClusterReachableReason, 1), cl(1, metav1.ConditionFalse, gitsyncv1.ClusterUnreachableReason, 2), true},
		{"another reason", cl(1, metav1.ConditionFalse, gitsyncv1.ClusterUnreachableReason, 1), cl(1, metav1.ConditionFalse, gitsyncv1.KubeConfigInvalidReason, 2), true},
		{"first probe", cl(1, "", "", 1), cl(1, metav1.ConditionTrue, gitsyncv1.ClusterReachableReason, 2), true},
		{"spec change", cl(1, metav1.ConditionTrue, gitsyncv1.ClusterReachableReason, 1), cl(2, metav1.ConditionTrue, gitsyncv1.ClusterReachableReason, 1), true},
	} {
		if got := p.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.wantUpdate {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.wantUpdate)
		}
	}
}

func TestRemoteDriftHotLoopBacksOff(t *testing.T) {
	d := newRemoteDrift()
	key := types.NamespacedName{Namespace: "team", Name: "prod"}
	app := types.NamespacedName{Namespace: "team", Name: "a"}
	d.clusters[key] = &clusterWatches{corrections: map[types.NamespacedName][]time.Time{}}
	start := time.Unix(1000, 0)
	// A person's edits, seconds apart, are each corrected at once.
	for i := range 30 {
		if wait := d.correcting(key, app, start.Add(time.Duration(i)*2*time.Second)); wait != 0 {
			t.Fatalf("edit %d, 2 s apart: waits %s", i, wait)
		}
	}
	// Ten within a second, then the eleventh waits for the window to pass.
	later := start.Add(time.Hour)
	for i := range hotLoopCorrections {
		if wait := d.correcting(key, app, later.Add(time.Duration(i)*100*time.Millisecond)); wait != 0 {
			t.Fatalf("correction %d waits %s", i, wait)
		}
	}
	if wait := d.correcting(key, app, later.Add(time.Second)); wait != hotLoopWindow-time.Second {
		t.Fatalf("the eleventh correction in a second waits %s", wait)
	}
	if wait := d.correcting(key, app, later.Add(hotLoopWindow+time.Second)); wait != 0 {
		t.Fatalf("after the window: waits %s", wait)
	}
}
