package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	kubelet "github.com/gitsync-dev/gitsync/internal/demo/standin"
)

// reconcile --with-source: the new commit is applied when the command returns.
func TestReconcileWithSource(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)
	sha := f.repo.Commit("main", "new image", appFiles("nginx:3.0", "old-s3cret-value"))

	r := gitsync(t, "reconcile", "app", "web", "-n", f.ns, "--with-source")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring("GitRepository " + f.ns + "/app-repo: revision main@sha1:" + sha))
	g.Expect(r.out).To(ContainSubstring("Application " + f.ns + "/web: applied revision main@sha1:" + sha))
	app := &gitsyncv1.Application{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(f.app), app)).To(Succeed())
	g.Expect(app.Status.LastAppliedRevision).To(Equal("main@sha1:" + sha))

	r = gitsync(t, "reconcile", "app", "nope", "-n", f.ns)
	g.Expect(r.code).To(Equal(1))
	g.Expect(r.err).To(ContainSubstring(`Application "nope" not found`))
}

// A failed sync makes reconcile exit non-zero with the reason, and wait fail fast.
func TestReconcileAndWaitReportFailure(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)
	files := appFiles("nginx:1.0", "old-s3cret-value")
	files["app/broken.yaml"] = "kind: [\n"
	f.repo.Commit("main", "broken", files)

	r := gitsync(t, "reconcile", "app", "web", "-n", f.ns, "--with-source")
	g.Expect(r.code).To(Equal(1), r.String())
	g.Expect(r.err).To(ContainSubstring("BuildFailed"))
	g.Expect(r.err).To(ContainSubstring("broken.yaml"))

	r = gitsync(t, "wait", "app", "web", "-n", f.ns, "--for", "ready", "--timeout", "2m")
	g.Expect(r.code).To(Equal(1), r.String())
	g.Expect(r.err).To(ContainSubstring("failed: BuildFailed"))
}

func TestSuspendResumeWait(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)

	r := gitsync(t, "suspend", "app", "web", "-n", f.ns)
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(Equal("Application " + f.ns + "/web suspended\n"))
	r = gitsync(t, "reconcile", "app", "web", "-n", f.ns)
	g.Expect(r.code).To(Equal(1), r.String())
	g.Expect(r.err).To(ContainSubstring("is suspended: resume it first (gitsync resume app web -n " + f.ns + ")"))
	r = gitsync(t, "get", "apps", "-n", f.ns, "--status-selector", "suspended=true")
	g.Expect(r.out).To(ContainSubstring("suspended"))
	r = gitsync(t, "wait", "app", "web", "-n", f.ns, "--for", "healthy", "--timeout", "1m")
	g.Expect(r.code).To(Equal(1), r.String())
	g.Expect(r.err).To(ContainSubstring("is suspended"))

	// A commit made while suspended is applied after resume.
	sha := f.repo.Commit("main", "while suspended", appFiles("nginx:4.0", "old-s3cret-value"))
	g.Expect(gitsync(t, "reconcile", "source", "app-repo", "-n", f.ns).code).To(Equal(0))
	r = gitsync(t, "resume", "app", "web", "-n", f.ns)
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(Equal("Application " + f.ns + "/web resumed\n"))
	f.waitApplied(t, sha)
	r = gitsync(t, "wait", "app", "web", "-n", f.ns, "--for", "synced", "--timeout", "1m")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring("is synced (revision main@sha1:" + sha + ")"))

	r = gitsync(t, "suspend", "source", "app-repo", "-n", f.ns)
	g.Expect(r.code).To(Equal(0), r.String())
	r = gitsync(t, "reconcile", "app", "web", "-n", f.ns, "--with-source")
	g.Expect(r.code).To(Equal(1), r.String())
	g.Expect(r.err).To(ContainSubstring("GitRepository " + f.ns + "/app-repo is suspended"))
	g.Expect(gitsync(t, "suspend", "app", "nope", "-n", f.ns).code).To(Equal(1))
	r = gitsync(t, "wait", "app", "web", "-n", f.ns, "--for", "happy")
	g.Expect(r.code).To(Equal(1))
	g.Expect(r.err).To(ContainSubstring("use synced, healthy or ready"))
}

func TestHistoryTreeEvents(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)
	rev := "main@sha1:" + f.sha

	r := gitsync(t, "history", "app", "web", "-n", f.ns)
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(MatchRegexp(`(?m)^REVISION\s+RESULT\s+STARTED\s+DURATION\s+CREATED\s+CONFIGURED\s+UNCHANGED\s+PRUNED\s+MESSAGE$`))
	g.Expect(r.out).To(MatchRegexp(`(?m)^` + rev + `\s+Succeeded\s+.*\s+3\s+0\s+0\s+0\s+ConfigMap/` + f.ns + `/settings created, .*$`))

	r = gitsync(t, "tree", "app", "web", "-n", f.ns)
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(Equal("Application/" + f.ns + "/web (Progressing)\n" +
		"├── ConfigMap\n" +
		"│   └── ConfigMap/" + f.ns + "/settings (Healthy)\n" +
		"├── Deployment\n" +
		"│   └── Deployment/" + f.ns + "/web (Progressing)\n" +
		"└── Secret\n" +
		"    └── Secret/" + f.ns + "/creds (Healthy)\n"))

	r = gitsync(t, "tree", "app", "web", "-n", f.ns, "-o", "json", "--children")
	g.Expect(r.code).To(Equal(0), r.String())
	var tree struct {
		Application string  `json:"application"`
		Objects     []*node `json:"objects"`
	}
	g.Expect(json.Unmarshal([]byte(r.out), &tree)).To(Succeed())
	g.Expect(tree.Application).To(Equal(f.ns + "/web"))
	g.Expect(tree.Objects).To(HaveLen(3))
	g.Expect(tree.Objects[1].Kind).To(Equal("Deployment"))

	r = gitsync(t, "events", "app", "web", "-n", f.ns)
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(MatchRegexp(`(?m)^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE$`))
	g.Expect(r.out).To(MatchRegexp(`Normal\s+Applied\s+Application/web\s+revision ` + rev))

	for _, verb := range []string{"history", "tree", "events"} {
		r = gitsync(t, verb, "app", "nope", "-n", f.ns)
		g.Expect(r.code).To(Equal(1), verb)
		g.Expect(r.err).To(ContainSubstring(`Application "nope" not found`), verb)
	}
}

// rollback pins the Application to a revision of its history: applied at once, a later
// commit is not applied, drift is corrected back to the pin, and resume applies the newest.
func TestRollbackThenResume(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFixture(t, nil)
	first := "main@sha1:" + f.sha
	second := f.repo.Commit("main", "v2", appFiles("nginx:2.0", "old-s3cret-value"))
	g.Expect(gitsync(t, "reconcile", "app", "web", "-n", f.ns, "--with-source").code).To(Equal(0))

	r := gitsync(t, "rollback", "app", "web", "-n", f.ns, "--to", f.sha[:10])
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring("pinned to " + first))
	g.Expect(r.out).To(ContainSubstring("applied revision " + first))
	image := func() string {
		d := &appsv1.Deployment{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "web"}, d)).To(Succeed())
		return d.Spec.Template.Spec.Containers[0].Image
	}
	g.Expect(image()).To(Equal("nginx:1.0"))
	r = gitsync(t, "get", "app", "web", "-n", f.ns)
	g.Expect(r.out).To(ContainSubstring("pinned to " + first))

	// A newer commit is fetched by the source but not applied.
	third := f.repo.Commit("main", "v3", appFiles("nginx:3.0", "old-s3cret-value"))
	r = gitsync(t, "reconcile", "app", "web", "-n", f.ns, "--with-source")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring("revision main@sha1:" + third))
	g.Expect(r.out).To(ContainSubstring("applied revision " + first))
	g.Expect(image()).To(Equal("nginx:1.0"))
	r = gitsync(t, "diff", "app", "web", "-n", f.ns)
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring("revision " + first))

	r = gitsync(t, "rollback", "app", "web", "-n", f.ns, "--to", "0000000")
	g.Expect(r.code).To(Equal(1))
	g.Expect(r.err).To(ContainSubstring("is not in the history"))

	r = gitsync(t, "resume", "app", "web", "-n", f.ns)
	g.Expect(r.code).To(Equal(0), r.String())
	f.waitApplied(t, third)
	g.Expect(image()).To(Equal("nginx:3.0"))
	app := &gitsyncv1.Application{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.app), app)).To(Succeed())
	g.Expect(app.Spec.PinnedRevision).To(BeEmpty())
	_ = second
}

// --prune=true|false asks the requested sync (only) to prune or not: the annotation the
// controller reads (gitsync.dev/sync-prune) names the request; without the flag none.
func TestReconcilePruneOption(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)
	app := &gitsyncv1.Application{}
	for _, args := range [][]string{{"reconcile", "app", "web", "--prune=false"}, {"sync", "app", "web", "--prune"}} {
		r := gitsync(t, append(args, "-n", f.ns)...)
		g.Expect(r.code).To(Equal(0), r.String())
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(f.app), app)).To(Succeed())
		requested := app.Annotations[gitsyncv1.RequestedAtAnnotation]
		g.Expect(app.Annotations[gitsyncv1.SyncPruneAnnotation]).To(Equal(gitsyncv1.PruneRequest(args[len(args)-1] == "--prune", requested)))
	}
	r := gitsync(t, "reconcile", "app", "web", "-n", f.ns)
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(f.app), app)).To(Succeed())
	g.Expect(app.Prunes()).To(BeTrue()) // spec.prune again: the annotation names an older request
	g.Expect(app.Annotations[gitsyncv1.SyncPruneAnnotation]).NotTo(HaveSuffix(app.Annotations[gitsyncv1.RequestedAtAnnotation]))
}

// reconcile waits for a sync that waits between reconciles (for its PreSync hook here),
// and prints its outcome once it ends, not when the sync took the request.
func TestReconcileWaitsForAWaitingSync(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)
	files := appFiles("nginx:2.0", "old-s3cret-value")
	files["app/migrate.yaml"] = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\n  annotations: {gitsync.dev/hook: PreSync}\n" +
		"spec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: run, image: example.com/run:1}]\n"
	sha := f.repo.Commit("main", "with a hook", files)

	done := make(chan result, 1)
	go func() { done <- gitsync(t, "reconcile", "app", "web", "-n", f.ns, "--with-source") }()
	ctx := context.Background()
	g.Eventually(func(g Gomega) {
		app := &gitsyncv1.Application{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.app), app)).To(Succeed())
		g.Expect(app.Status.SyncProgress).NotTo(BeNil())
		g.Expect(app.Status.LastHandledReconcileAt).NotTo(BeEmpty())
	}).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
	g.Consistently(done, 3*time.Second, 200*time.Millisecond).ShouldNot(Receive(), "reconcile waits for the hook")
	g.Expect(kubelet.FinishJob(ctx, env.Client, f.ns, "migrate", true)).To(Succeed())
	var r result
	g.Eventually(done).WithTimeout(time.Minute).Should(Receive(&r))
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring("◎ waiting for the sync: PreSync: waiting for Job/migrate"))
	g.Expect(r.out).To(ContainSubstring("Application " + f.ns + "/web: applied revision main@sha1:" + sha))
}

// reconcile prints what its own request did: the counts of the sync it started, or
// "no changes" when the sync changed nothing (and wrote no history), never the counts
// of an earlier sync.
func TestReconcileSaysWhatThisRequestDid(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil) // its first sync created 3 objects
	rev := "main@sha1:" + f.sha

	r := gitsync(t, "reconcile", "app", "web", "-n", f.ns)
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring("✔ Application " + f.ns + "/web: up to date, no changes (applied revision " + rev + ")"))
	g.Expect(r.out).NotTo(ContainSubstring("created"))

	files := appFiles("nginx:1.0", "old-s3cret-value")
	files["app/configmap.yaml"] = strings.Replace(configMapYAML, "hello", "bonjour", 1)
	sha := f.repo.Commit("main", "greeting", files)
	r = gitsync(t, "reconcile", "app", "web", "-n", f.ns, "--with-source")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring("✔ Application " + f.ns + "/web: applied revision main@sha1:" + sha + " (0 created, 1 configured, 2 unchanged, 0 pruned)"))

	r = gitsync(t, "reconcile", "app", "web", "-n", f.ns)
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring("up to date, no changes (applied revision main@sha1:" + sha + ")"))
	g.Expect(r.out).NotTo(ContainSubstring("configured"))
}
