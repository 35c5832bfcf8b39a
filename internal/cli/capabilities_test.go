package cli

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/operations"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

// capsChart reads the cluster's Capabilities and a value from a valuesFrom Secret.
func capsChart(greeting string) map[string]string {
	return map[string]string{
		"chart/Chart.yaml":  "apiVersion: v2\nname: caps\nversion: 0.1.0\n",
		"chart/values.yaml": "greeting: " + greeting + "\nsecretValue: none\n",
		"chart/templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: caps}
data:
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
  served: {{ .Capabilities.APIVersions.Has "gitsync.dev/v1alpha1/GitRepository" | quote }}
  greeting: {{ .Values.greeting | quote }}
  fromSecret: {{ .Values.secretValue | quote }}
`,
	}
}

// `gitsync diff` and the UI's diff render a chart as the sync does: with the cluster's
// Capabilities (KubeVersion, APIVersions.Has of a CRD the cluster serves) and valuesFrom
// read from the cluster. Nothing changed in Git: no diff, exit 0; one value changed in
// Git: exactly that field.
func TestDiffOfAChartReadsTheClusterAsTheSyncDoes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	srv := gittest.NewServer(t, gittest.Options{})
	repo := srv.CreateRepo("caps")
	sha := repo.Commit("main", "first", capsChart("hello"))
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "vals", Namespace: ns},
		StringData: map[string]string{"values.yaml": "secretValue: from-secret\n"}})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &gitsyncv1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "caps", Namespace: ns},
		Spec:       gitsyncv1.GitRepositorySpec{URL: srv.HTTPURL("caps"), Ref: &gitsyncv1.GitRepositoryRef{Branch: "main"}},
	})).To(Succeed())
	f := &fixture{ns: ns, srv: srv, repo: repo, sha: sha, app: &gitsyncv1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "caps", Namespace: ns},
		Spec: gitsyncv1.ApplicationSpec{
			SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "caps"},
			Path:      "chart",
			Helm:      &gitsyncv1.HelmSpec{ValuesFrom: []gitsyncv1.ValuesReference{{Kind: "Secret", Name: "vals"}}},
		},
	}}
	g.Expect(env.Client.Create(ctx, f.app)).To(Succeed())
	f.waitApplied(t, sha)
	live := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "caps"}, live)).To(Succeed())
	g.Expect(live.Data).To(HaveKeyWithValue("served", "true"))
	g.Expect(live.Data).To(HaveKeyWithValue("fromSecret", "from-secret"))

	r := gitsync(t, "diff", "app", "caps", "-n", ns)
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring("no changes"))
	diffs, err := operations.ObjectDiffsFromSource(ctx, env.Config, env.Client, f.app, func(string) bool { return true })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(diffs).To(HaveLen(1))
	g.Expect(diffs[0].Action).To(Equal("unchanged"), diffs[0].Diff)

	// One value changes in Git (not synced yet): both show exactly that field.
	f.setAutoSync(t, false)
	repo.Commit("main", "new greeting", capsChart("hi there"))
	r = gitsync(t, "reconcile", "source", "caps", "-n", ns)
	g.Expect(r.code).To(Equal(0), r.String())
	r = gitsync(t, "diff", "app", "caps", "-n", ns)
	g.Expect(r.code).To(Equal(1), r.String())
	g.Expect(r.out).To(ContainSubstring("    /data/greeting\n"))
	var changed []string
	for _, line := range strings.Split(r.out, "\n") {
		if t := strings.TrimSpace(line); (strings.HasPrefix(t, "-") || strings.HasPrefix(t, "+")) && !strings.HasPrefix(t, "---") && !strings.HasPrefix(t, "+++") {
			changed = append(changed, t)
		}
	}
	g.Expect(changed).To(Equal([]string{"-  greeting: hello", "+  greeting: hi there"}), r.out)
	diffs, err = operations.ObjectDiffsFromSource(ctx, env.Config, env.Client, f.app, func(string) bool { return true })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(diffs).To(HaveLen(1))
	g.Expect(diffs[0].Action).To(Equal("configured"))
	g.Expect(diffs[0].Fields).To(Equal([]string{"/data/greeting"}))
}
