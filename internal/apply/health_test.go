package apply

import (
	"context"
	"testing"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// setDeploymentStatus writes the status a deployment controller would: failed=true for
// a rollout past its progress deadline, false for a complete one.
func setDeploymentStatus(t *testing.T, obj *unstructured.Unstructured, failed bool) {
	t.Helper()
	ctx := context.Background()
	d := &appsv1.Deployment{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), d); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation}
	if failed {
		d.Status.Conditions = []appsv1.DeploymentCondition{{
			Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded",
			Message: `ReplicaSet "web" has timed out progressing.`, LastUpdateTime: now, LastTransitionTime: now,
		}}
	} else {
		d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas = 1, 1, 1, 1
		d.Status.Conditions = []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", LastUpdateTime: now, LastTransitionTime: now},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable", LastUpdateTime: now, LastTransitionTime: now},
		}
	}
	if err := env.Client.Status().Update(ctx, d); err != nil {
		t.Fatal(err)
	}
}

func TestHealth(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	m := newManager(Owner{Name: "app", Namespace: ns})

	cm, progressing, failed := configMap(t, ns, "cfg", "1"), deployment(t, ns, "progressing"), deployment(t, ns, "failed")
	_, err := m.Apply(ctx, []*unstructured.Unstructured{cm, progressing, failed}, Options{})
	g.Expect(err).NotTo(HaveOccurred())
	setDeploymentStatus(t, failed, true)

	check := func(obj *unstructured.Unstructured, want string) {
		t.Helper()
		h, err := m.Health(ctx, []Entry{EntryOf(obj)})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(h.Status).To(Equal(want), h.Message)
	}
	check(cm, gitsyncv1.HealthStatusHealthy)
	check(progressing, gitsyncv1.HealthStatusProgressing)
	check(failed, gitsyncv1.HealthStatusDegraded)

	g.Expect(env.Client.Delete(ctx, cm)).To(Succeed())
	check(cm, gitsyncv1.HealthStatusMissing)

	h, err := m.Health(ctx, []Entry{EntryOf(cm), EntryOf(progressing), EntryOf(failed)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.Status).To(Equal(gitsyncv1.HealthStatusDegraded))
	g.Expect(h.Message).To(Equal("Deployment/" + ns + "/failed: Progress deadline exceeded (2 more objects not healthy)"))
	g.Expect(h.Objects).To(Equal(map[string]string{
		"ConfigMap/" + ns + "/cfg":          gitsyncv1.HealthStatusMissing,
		"Deployment/" + ns + "/progressing": gitsyncv1.HealthStatusProgressing,
		"Deployment/" + ns + "/failed":      gitsyncv1.HealthStatusDegraded,
	}))
}

// Right after an apply, kinds without a status are Healthy without a read; the others
// are read as by Health.
func TestHealthAfterApply(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	m := newManager(Owner{Name: "app", Namespace: ns})
	cm, progressing := configMap(t, ns, "cfg", "1"), deployment(t, ns, "progressing")
	_, err := m.Apply(ctx, []*unstructured.Unstructured{cm, progressing}, Options{})
	g.Expect(err).NotTo(HaveOccurred())
	// Deleted behind our back: HealthAfterApply does not look (drift detection does).
	g.Expect(env.Client.Delete(ctx, cm)).To(Succeed())

	h, err := m.HealthAfterApply(ctx, []Entry{EntryOf(cm), EntryOf(progressing)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.Objects).To(Equal(map[string]string{
		"ConfigMap/" + ns + "/cfg":          gitsyncv1.HealthStatusHealthy,
		"Deployment/" + ns + "/progressing": gitsyncv1.HealthStatusProgressing,
	}))
	g.Expect(h.Status).To(Equal(gitsyncv1.HealthStatusProgressing))
}

func TestAggregate(t *testing.T) {
	obj := func(subject string, s status.Status, msg string) objectStatus {
		return objectStatus{Subject: subject, Status: s, Message: msg}
	}
	tests := []struct {
		name        string
		objs        []objectStatus
		wantStatus  string
		wantMessage string
	}{
		{name: "no objects", wantStatus: gitsyncv1.HealthStatusHealthy, wantMessage: "no objects"},
		{
			name:       "all current",
			objs:       []objectStatus{obj("A", status.CurrentStatus, "ok"), obj("B", status.CurrentStatus, "ok")},
			wantStatus: gitsyncv1.HealthStatusHealthy, wantMessage: "all 2 objects are healthy",
		},
		{
			name:       "in progress beats current",
			objs:       []objectStatus{obj("A", status.CurrentStatus, ""), obj("B", status.InProgressStatus, "Replicas: 0/1")},
			wantStatus: gitsyncv1.HealthStatusProgressing, wantMessage: "B: Replicas: 0/1",
		},
		{
			name:       "terminating is progressing",
			objs:       []objectStatus{obj("A", status.TerminatingStatus, "Resource scheduled for deletion")},
			wantStatus: gitsyncv1.HealthStatusProgressing, wantMessage: "A: Resource scheduled for deletion",
		},
		{
			name:       "unknown beats progressing",
			objs:       []objectStatus{obj("A", status.InProgressStatus, "x"), obj("B", status.UnknownStatus, "")},
			wantStatus: gitsyncv1.HealthStatusUnknown, wantMessage: "B: Unknown (1 more objects not healthy)",
		},
		{
			name:       "missing beats unknown",
			objs:       []objectStatus{obj("A", status.NotFoundStatus, "not found"), obj("B", status.UnknownStatus, "y")},
			wantStatus: gitsyncv1.HealthStatusMissing, wantMessage: "A: not found (1 more objects not healthy)",
		},
		{
			name: "degraded is worst",
			objs: []objectStatus{
				obj("A", status.NotFoundStatus, "not found"), obj("B", status.FailedStatus, "Progress deadline exceeded"),
				obj("C", status.CurrentStatus, ""), obj("D", status.FailedStatus, "second"),
			},
			wantStatus: gitsyncv1.HealthStatusDegraded, wantMessage: "B: Progress deadline exceeded (2 more objects not healthy)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			h := aggregate(tt.objs)
			g.Expect(h.Status).To(Equal(tt.wantStatus))
			g.Expect(h.Message).To(Equal(tt.wantMessage))
			g.Expect(h.Objects).To(HaveLen(len(tt.objs)))
		})
	}
}

func TestWait(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := env.Namespace(t)
	m := newManager(Owner{Name: "app", Namespace: ns})

	cm, ready, progressing, failed := configMap(t, ns, "cfg", "1"), deployment(t, ns, "ready"),
		deployment(t, ns, "progressing"), deployment(t, ns, "failed")
	_, err := m.Apply(ctx, []*unstructured.Unstructured{cm, ready, progressing, failed}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	setDeploymentStatus(t, ready, false)
	setDeploymentStatus(t, failed, true)

	t.Run("current", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(m.Wait(ctx, []Entry{EntryOf(cm), EntryOf(ready)}, 10*time.Second)).To(Succeed())
	})

	t.Run("fails fast", func(t *testing.T) {
		g := NewWithT(t)
		start := time.Now()
		err := m.Wait(ctx, []Entry{EntryOf(cm), EntryOf(progressing), EntryOf(failed)}, time.Minute)
		g.Expect(err).To(MatchError(ContainSubstring("Deployment/" + ns + "/failed (Failed: Progress deadline exceeded)")))
		g.Expect(err.Error()).NotTo(ContainSubstring("progressing"))
		g.Expect(time.Since(start)).To(BeNumerically("<", 10*time.Second))
	})

	t.Run("times out", func(t *testing.T) {
		g := NewWithT(t)
		err := m.Wait(ctx, []Entry{EntryOf(cm), EntryOf(progressing)}, time.Second)
		g.Expect(err).To(MatchError(ContainSubstring("timed out after 1s")))
		g.Expect(err.Error()).To(ContainSubstring("Deployment/" + ns + "/progressing (InProgress"))
		g.Expect(err.Error()).NotTo(ContainSubstring("ConfigMap"))
	})
}
