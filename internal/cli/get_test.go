package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

func TestGet(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)
	rev := "main@sha1:" + f.sha

	r := gitsync(t, "get", "apps", "-n", f.ns)
	g.Expect(r.code).To(Equal(0), r.String())
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	g.Expect(lines).To(HaveLen(2), r.String())
	g.Expect(strings.Fields(lines[0])).To(Equal([]string{"NAME", "READY", "SYNC", "HEALTH", "REVISION", "AGE", "MESSAGE"}))
	g.Expect(strings.Fields(lines[1])[:5]).To(Equal([]string{"web", "True", "Synced", "Progressing", rev}), r.String())

	r = gitsync(t, "get", "apps", "-A")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(HavePrefix("NAMESPACE"))
	g.Expect(r.out).To(MatchRegexp(`(?m)^` + f.ns + `\s+web\s+True\s+Synced`))

	r = gitsync(t, "get", "sources", "-n", f.ns)
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(MatchRegexp(`(?m)^gitrepository/app-repo\s+True\s+` + rev))

	// Label and status selectors filter.
	g.Expect(gitsync(t, "get", "apps", "-n", f.ns, "-l", "team=a").out).To(ContainSubstring("web"))
	g.Expect(gitsync(t, "get", "apps", "-n", f.ns, "-l", "team=b").out).NotTo(ContainSubstring("web"))
	g.Expect(gitsync(t, "get", "apps", "-n", f.ns, "--status-selector", "ready=false").out).NotTo(ContainSubstring("web"))
	g.Expect(gitsync(t, "get", "apps", "-n", f.ns, "--status-selector", "ready=true,sync=synced").out).To(ContainSubstring("web"))
	r = gitsync(t, "get", "apps", "-n", f.ns, "--status-selector", "colour=red")
	g.Expect(r.code).To(Equal(1))
	g.Expect(r.err).To(ContainSubstring("unknown key"))

	// JSON list and a single object as YAML.
	r = gitsync(t, "get", "apps", "-n", f.ns, "-o", "json")
	g.Expect(r.code).To(Equal(0), r.String())
	var list struct {
		Kind  string                  `json:"kind"`
		Items []gitsyncv1.Application `json:"items"`
	}
	g.Expect(json.Unmarshal([]byte(r.out), &list)).To(Succeed())
	g.Expect(list.Kind).To(Equal("List"))
	g.Expect(list.Items).To(HaveLen(1))
	g.Expect(list.Items[0].Kind).To(Equal("Application"))
	g.Expect(list.Items[0].Status.LastAppliedRevision).To(Equal(rev))
	r = gitsync(t, "get", "app", "web", "-n", f.ns, "-o", "yaml")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring("kind: Application\n"))
	g.Expect(r.out).To(ContainSubstring("lastAppliedRevision: " + rev))

	// Not found: exit 1 and a clear message.
	r = gitsync(t, "get", "app", "nope", "-n", f.ns)
	g.Expect(r.code).To(Equal(1))
	g.Expect(r.err).To(Equal(`error: Application "nope" not found in namespace ` + f.ns + "\n"))
	// Forbidden: exit 1 with the API server's reason.
	r = gitsync(t, "get", "apps", "-n", f.ns, "--as", "nobody")
	g.Expect(r.code).To(Equal(1))
	g.Expect(r.err).To(ContainSubstring(`applications.gitsync.dev is forbidden: User "nobody" cannot list`))
	r = gitsync(t, "reconcile", "app", "web", "-n", f.ns, "--as", "nobody")
	g.Expect(r.code).To(Equal(1))
	g.Expect(r.err).To(ContainSubstring("forbidden"))
	r = gitsync(t, "get", "widgets")
	g.Expect(r.code).To(Equal(1))
	g.Expect(r.err).To(ContainSubstring(`unknown kind "widgets"`))
}

// startWatch runs `gitsync ARGS... --kubeconfig K` (a watch) until ctx ends, and returns
// once its watches had the time to start: events after that are what counts. done gets
// the exit code.
func startWatch(ctx context.Context, args ...string) (out *syncBuffer, done chan int) {
	out, done = &syncBuffer{}, make(chan int, 1)
	go func() {
		root := NewRootCommand(Streams{In: strings.NewReader(""), Out: out, ErrOut: &syncBuffer{}}, testTools)
		done <- Execute(ctx, root, append(args, "--kubeconfig", kubeconfigPath))
	}()
	time.Sleep(500 * time.Millisecond)
	return out, done
}

// -w is a watch: a change made after the listing is printed without polling.
func TestGetWatch(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, done := startWatch(ctx, "get", "apps", "-w", "-n", ns)
	app := &gitsyncv1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: ns},
		Spec:       gitsyncv1.ApplicationSpec{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "missing"}},
	}
	g.Expect(env.Client.Create(ctx, app)).To(Succeed())
	// The controller finds no source: the watch prints the row with Ready False.
	g.Eventually(out.String).WithTimeout(30 * time.Second).Should(MatchRegexp(`(?m)^late\s+False\s+.*does not exist`))
	cancel()
	g.Eventually(done).WithTimeout(10 * time.Second).Should(Receive(Equal(0)))
	g.Expect(env.Client.Delete(context.Background(), app, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
}

// `get sources` is one table of GitRepositories and HelmRepositories, each row named
// KIND/NAME, with the columns that mean something for a source (no SYNC, no HEALTH).
func TestGetSourcesIsOneTable(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)
	rev := "main@sha1:" + f.sha
	g.Expect(env.Client.Create(context.Background(), &gitsyncv1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "charts", Namespace: f.ns},
		Spec:       gitsyncv1.HelmRepositorySpec{URL: "https://127.0.0.1:1/charts"},
	})).To(Succeed())

	r := gitsync(t, "get", "sources", "-n", f.ns)
	g.Expect(r.code).To(Equal(0), r.String())
	lines := strings.Split(strings.TrimSuffix(r.out, "\n"), "\n")
	g.Expect(lines).To(HaveLen(3), r.String())
	g.Expect(strings.Fields(lines[0])).To(Equal([]string{"NAME", "READY", "REVISION", "AGE", "MESSAGE"}))
	g.Expect(strings.Fields(lines[1])[:3]).To(Equal([]string{"gitrepository/app-repo", "True", rev}))
	g.Expect(strings.Fields(lines[2])[0]).To(Equal("helmrepository/charts"))

	r = gitsync(t, "get", "sources", "-A")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(HavePrefix("NAMESPACE"))
	g.Expect(strings.Count(r.out, "NAMESPACE")).To(Equal(1), "one header: %s", r.out)
	g.Expect(r.out).NotTo(ContainSubstring("\n\n"))
	g.Expect(r.out).To(MatchRegexp(`(?m)^` + f.ns + `\s+gitrepository/app-repo\s+True\s+` + rev + `\s`))
	g.Expect(r.out).To(MatchRegexp(`(?m)^` + f.ns + `\s+helmrepository/charts\s`))

	r = gitsync(t, "get", "sources", "-n", f.ns, "-o", "wide")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(MatchRegexp(`^NAME\s+READY\s+REVISION\s+AGE\s+URL\s+REF\s+MESSAGE\n`))
	g.Expect(r.out).To(MatchRegexp(`(?m)^helmrepository/charts\s.*https://127\.0\.0\.1:1/charts\s+-\s`))
}
