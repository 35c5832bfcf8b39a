package fault

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/chartserver"
)

// sharedLogLines returns the lines of the shared operator's log that hold all of parts.
func sharedLogLines(g Gomega, parts ...string) []string {
	data, err := os.ReadFile(sharedLog)
	g.Expect(err).NotTo(HaveOccurred())
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		all := true
		for _, p := range parts {
			if !strings.Contains(line, p) {
				all = false
				break
			}
		}
		if all {
			out = append(out, line)
		}
	}
	return out
}

// The operator logs one line per sync (revision and counts), per drift detected and
// corrected (object, fields, writer: never the value), and per failed revision (reason).
func TestOperatorLogsSyncsDriftAndFailures(t *testing.T) {
	g := NewWithT(t)
	sharedOperator(t)
	ctx := context.Background()
	const value = "a-value-no-log-may-hold"
	files := map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: logged}\ndata: {greeting: hello}\n"}
	f, sha := newFixture(t, files, time.Second)
	f.waitApplied(sha, time.Minute)
	g.Eventually(func(g Gomega) []string {
		return sharedLogLines(g, `"msg":"synced"`, f.ns, revision(sha), `"created":1`)
	}).WithTimeout(10 * time.Second).WithPolling(200 * time.Millisecond).ShouldNot(BeEmpty())

	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "logged"}, cm)).To(Succeed())
	base := client.MergeFrom(cm.DeepCopy())
	cm.Data["greeting"] = value
	g.Expect(env.Client.Patch(ctx, cm, base, client.FieldOwner("kubectl-edit"))).To(Succeed())
	g.Eventually(func(g Gomega) []string {
		return sharedLogLines(g, `"msg":"drift corrected"`, "ConfigMap/"+f.ns+"/logged", "/data/greeting", "kubectl-edit")
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).ShouldNot(BeEmpty())
	g.Expect(sharedLogLines(g, `"msg":"drift detected"`, "ConfigMap/"+f.ns+"/logged")).NotTo(BeEmpty())

	files["broken.yaml"] = "kind: [unclosed\n"
	broken := f.repo.Commit("main", "broken", files)
	g.Eventually(func(g Gomega) []string {
		return sharedLogLines(g, `"msg":"sync failed"`, f.ns, `"reason":"BuildFailed"`, revision(broken))
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).ShouldNot(BeEmpty())
	g.Expect(sharedLogLines(g, value)).To(BeEmpty(), "a value reached the log")
}

// A chart that is not in its repository fails the sync with one log line that names the
// reason (ChartNotFound) and the Application.
func TestOperatorLogsChartNotFound(t *testing.T) {
	g := NewWithT(t)
	sharedOperator(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	repo := chartserver.NewRepo(t)
	repo.Add("web", "1.0.0", chartserver.Package(t, "web", chartserver.ConfigMapChart("web", "1.0.0")))
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ca", Namespace: ns},
		Data: map[string][]byte{"ca.crt": repo.CA}})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &gitsyncv1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "charts", Namespace: ns},
		Spec:       gitsyncv1.HelmRepositorySpec{URL: repo.URL, SecretRef: &gitsyncv1.LocalObjectReference{Name: "ca"}},
	})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &gitsyncv1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "missing-chart", Namespace: ns},
		Spec: gitsyncv1.ApplicationSpec{
			SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.HelmRepositoryKind, Name: "charts"},
			Helm:      &gitsyncv1.HelmSpec{Chart: "nope"},
		},
	})).To(Succeed())
	g.Eventually(func(g Gomega) []string {
		return sharedLogLines(g, `"msg":"sync failed"`, ns, "missing-chart", `"reason":"ChartNotFound"`, `chart \"nope\" is not in the repository`)
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).ShouldNot(BeEmpty())
}
