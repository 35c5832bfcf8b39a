package cli

import (
	"context"
	"encoding/base64"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitsync-dev/gitsync/internal/operations"
)

// lookupChart is a tenant's chart that copies another namespace's Secret into its output
// through Helm's lookup.
const lookupChart = `{{- $s := lookup "v1" "Secret" %q "admin-token" }}
{{- $t := "nothing" }}
{{- if $s }}{{ $t = $s.data.token }}{{ end }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: leak
data:
  stolen: {{ $t | quote }}
`

// gitsync build and diff run as the person at the terminal, often a cluster admin: a
// tenant's chart must not borrow those rights through lookup. Without --lookup, lookup
// finds nothing; with it, the chart reads the cluster as the person asked.
func TestBuildAndDiffDoNotLookupAsTheCaller(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)
	victim := env.Namespace(t)
	token := "adm1n-t0ken-value"
	g.Expect(env.Client.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "admin-token", Namespace: victim},
		Data:       map[string][]byte{"token": []byte(token)},
	})).To(Succeed())
	encoded := base64.StdEncoding.EncodeToString([]byte(token))
	dir := localCopy(t, map[string]string{
		"app/Chart.yaml":          "apiVersion: v2\nname: leak\nversion: 0.1.0\n",
		"app/templates/leak.yaml": fmt.Sprintf(lookupChart, victim),
	})

	r := gitsync(t, "build", "app", "web", "-n", f.ns, "--path", dir)
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring(`stolen: nothing`))
	g.Expect(r.out + r.err).NotTo(ContainSubstring(encoded))

	r = gitsync(t, "diff", "app", "web", "-n", f.ns, "--path", dir)
	g.Expect(r.code).To(Equal(1), r.String()) // changes: the chart replaces the app
	g.Expect(r.out + r.err).NotTo(ContainSubstring(encoded))

	// Asked for: the chart's lookup reads the cluster with the caller's rights.
	r = gitsync(t, "build", "app", "web", "-n", f.ns, "--path", dir, "--lookup")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring("stolen: " + encoded))
}

// The MCP diff tool (run by an assistant with the person's kubeconfig) never lends the
// person's rights to a chart's lookup.
func TestMCPDiffDoesNotLookupAsTheCaller(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)
	victim := env.Namespace(t)
	token := "adm1n-t0ken-for-mcp"
	g.Expect(env.Client.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "admin-token", Namespace: victim},
		Data:       map[string][]byte{"token": []byte(token)},
	})).To(Succeed())
	encoded := base64.StdEncoding.EncodeToString([]byte(token))
	f.repo.Commit("leak", "a chart that looks up", map[string]string{
		"app/Chart.yaml":          "apiVersion: v2\nname: leak\nversion: 0.1.0\n",
		"app/templates/leak.yaml": fmt.Sprintf(lookupChart, victim),
	})
	// The ConfigMap exists, so that the diff prints its fields (a created object's are not).
	g.Expect(env.Client.Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "leak", Namespace: f.ns}, Data: map[string]string{"stolen": "before"},
	})).To(Succeed())
	s, _ := mcpSession(t, kubeconfigPath)
	text, isErr := call(t, s, "diff_application", map[string]any{"namespace": f.ns, "name": "web", "revision": "leak"})
	g.Expect(isErr).To(BeFalse(), text)
	g.Expect(text).To(ContainSubstring("configured ConfigMap/" + f.ns + "/leak"))
	g.Expect(text).To(ContainSubstring("stolen: nothing"))
	g.Expect(text).NotTo(ContainSubstring(encoded))
}

// gitsync ui's diff renders as the viewer: a chart's lookup finds nothing there either.
func TestUIDiffDoesNotLookupAsTheViewer(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFixture(t, nil)
	victim := env.Namespace(t)
	token := "adm1n-t0ken-for-the-ui"
	g.Expect(env.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "admin-token", Namespace: victim},
		Data:       map[string][]byte{"token": []byte(token)},
	})).To(Succeed())
	encoded := base64.StdEncoding.EncodeToString([]byte(token))
	g.Expect(env.Client.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "leak", Namespace: f.ns}, Data: map[string]string{"stolen": "before"},
	})).To(Succeed())
	f.setAutoSync(t, false)
	f.repo.Commit("main", "a chart that looks up", map[string]string{
		"app/Chart.yaml":          "apiVersion: v2\nname: leak\nversion: 0.1.0\n",
		"app/templates/leak.yaml": fmt.Sprintf(lookupChart, victim),
	})
	r := gitsync(t, "reconcile", "source", "app-repo", "-n", f.ns)
	g.Expect(r.code).To(Equal(0), r.String())

	diffs, err := operations.ObjectDiffsFromSource(ctx, env.Config, env.Client, f.app, func(string) bool { return true })
	g.Expect(err).NotTo(HaveOccurred())
	found := false
	for _, d := range diffs {
		g.Expect(d.Git+d.Diff).NotTo(ContainSubstring(encoded), d.Subject)
		if d.Subject == "ConfigMap/"+f.ns+"/leak" {
			found = true
			g.Expect(d.Git).To(ContainSubstring("stolen: nothing"))
		}
	}
	g.Expect(found).To(BeTrue(), "%+v", diffs)
}
