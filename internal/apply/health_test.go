package apply

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitsync-dev/gitsync/internal/health"
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

	check := func(obj *unstructured.Unstructured, want health.Status) {
		t.Helper()
		h, err := m.Health(ctx, []Entry{EntryOf(obj)})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(h.Status).To(Equal(want), h.Message)
	}
	check(cm, health.Healthy)
	check(progressing, health.Progressing)
	check(failed, health.Degraded)

	g.Expect(env.Client.Delete(ctx, cm)).To(Succeed())
	check(cm, health.Missing)

	h, err := m.Health(ctx, []Entry{EntryOf(cm), EntryOf(progressing), EntryOf(failed)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.Status).To(Equal(health.Degraded))
	g.Expect(h.Message).To(Equal("Deployment/" + ns + "/failed: Progress deadline exceeded (2 more objects not healthy)"))
	g.Expect(h.Objects).To(Equal(map[string]health.Status{
		"ConfigMap/" + ns + "/cfg":          health.Missing,
		"Deployment/" + ns + "/progressing": health.Progressing,
		"Deployment/" + ns + "/failed":      health.Degraded,
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
	g.Expect(h.Objects).To(Equal(map[string]health.Status{
		"ConfigMap/" + ns + "/cfg":          health.Healthy,
		"Deployment/" + ns + "/progressing": health.Progressing,
	}))
	g.Expect(h.Status).To(Equal(health.Progressing))
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
