package fault

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// floodApps is how many slow Applications the flooding tenant queues at once.
const floodApps = 24

// slowChart is a chart of many objects (150 ConfigMaps named after the release), each
// dry-run and applied: an Application of it is slow to sync, within every bound.
func slowChart() map[string]string {
	return chartFiles("{{ range until 150 }}---\napiVersion: v1\nkind: ConfigMap\n" +
		"metadata: {name: {{ $.Release.Name }}-{{ . }}}\ndata: {value: flood}\n{{ end }}")
}

// Issue 34, item 2, "Fairness by default", against the operator binary: a tenant queues
// 24 more Applications of a chart of many objects (each slow to sync) in its namespace,
// all at once; another tenant's Application, created right after them, is applied while
// most of the flood still waits (with one queue shared by every namespace it came after
// all of them), in its normal time; the operator is not restarted.
func TestOneTenantsFloodDoesNotDelayAnother(t *testing.T) {
	sharedOperator(t)
	g := NewWithT(t)
	ctx := context.Background()
	before := sharedState()

	// The flood's source and one Application of it: how long one slow render takes.
	flood, floodSHA := newFixture(t, slowChart(), time.Hour)
	begin := time.Now()
	flood.waitApplied(floodSHA, 2*time.Minute)
	t.Logf("one Application of the chart of many objects applied in %v", time.Since(begin).Round(100*time.Millisecond))

	var names []string
	for i := range floodApps {
		app := &gitsyncv1.Application{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("flood-%02d", i), Namespace: flood.ns},
			Spec: gitsyncv1.ApplicationSpec{
				SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: repoName},
				Path:      "./",
				Prune:     true,
			},
		}
		g.Expect(env.Client.Create(ctx, app)).To(Succeed())
		names = append(names, app.Name)
	}
	t.Cleanup(func() { suspendApps(t, flood.ns, names) })
	floodApplied := func() int {
		list := &gitsyncv1.ApplicationList{}
		g.Expect(env.Client.List(ctx, list, client.InNamespace(flood.ns))).To(Succeed())
		n := 0
		for _, app := range list.Items {
			if app.Name != appName && app.Status.LastAppliedRevision == revision(floodSHA) {
				n++
			}
		}
		return n
	}

	begin = time.Now()
	other, otherSHA := newFixture(t, desired{configMaps: map[string]map[string]string{"cm": {"k": "v"}}}.files(), time.Second)
	other.waitApplied(otherSHA, 2*time.Minute)
	took, applied := time.Since(begin), floodApplied()
	t.Logf("the other tenant's Application applied in %v, when %d of the flood's %d were", took.Round(100*time.Millisecond), applied, floodApps)
	g.Expect(applied).To(BeNumerically("<", floodApps/2), "the other tenant waited for the flood")
	g.Expect(took).To(BeNumerically("<", 30*time.Second), "the other tenant's Application took longer than its normal time")

	// The flood is served too, and nothing of the other tenant's changed hands.
	g.Eventually(floodApplied).WithTimeout(5 * time.Minute).WithPolling(time.Second).Should(Equal(floodApps))
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: other.ns, Name: "cm"}, cm)).To(Succeed())
	g.Expect(cm.Data).To(Equal(map[string]string{"k": "v"}))
	g.Expect(cm.Labels[gitsyncv1.ApplicationNamespaceLabel]).To(Equal(other.ns))

	before.expectAlive(g)
}

// suspendApps suspends the named Applications of ns (so that later tests' operator work
// is not theirs).
func suspendApps(t *testing.T, ns string, names []string) {
	t.Helper()
	for _, name := range names {
		app := &gitsyncv1.Application{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, app); err != nil {
			t.Errorf("suspending %s: %v", name, err)
			continue
		}
		base := client.MergeFrom(app.DeepCopy())
		app.Spec.Suspend = true
		if err := env.Client.Patch(context.Background(), app, base); err != nil {
			t.Errorf("suspending %s: %v", name, err)
		}
	}
}
