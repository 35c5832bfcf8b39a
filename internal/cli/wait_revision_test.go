package cli

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// brokenFiles are the test app plus a file that does not parse.
func brokenFiles() map[string]string {
	files := appFiles("nginx:1.0", "old-s3cret-value")
	files["app/broken.yaml"] = "kind: [\n"
	return files
}

// fixedFiles are brokenFiles with the broken file fixed (a commit keeps the files it
// does not name).
func fixedFiles() map[string]string {
	files := appFiles("nginx:1.1", "old-s3cret-value")
	files["app/broken.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fixed\n"
	return files
}

// Push, then wait: `wait --for synced` judges the revision it waits for. A broken commit's
// wait fails with its error; the fix's wait, started right after the commit (no sleep),
// succeeds although the Application still shows the broken revision's failure when it
// starts.
func TestWaitJudgesTheAwaitedRevision(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)

	broken := f.repo.Commit("main", "broken", brokenFiles())
	g.Expect(gitsync(t, "reconcile", "source", "app-repo", "-n", f.ns).code).To(Equal(0))
	r := gitsync(t, "wait", "app", "web", "-n", f.ns, "--for", "synced", "--timeout", "2m")
	g.Expect(r.code).To(Equal(1), r.String())
	g.Expect(r.err).To(ContainSubstring("failed: BuildFailed"))
	g.Expect(r.err).To(ContainSubstring("broken.yaml"))
	g.Expect(r.err).To(ContainSubstring(broken))
	g.Expect(r.err).To(ContainSubstring("to wait for a commit you just pushed: --revision <commit>"))

	fixed := f.repo.Commit("main", "fixed", fixedFiles())
	done := make(chan result, 1)
	go func() {
		done <- gitsyncCtx(context.Background(), "wait", "app", "web", "-n", f.ns, "--for", "synced", "--revision", fixed[:12], "--timeout", "2m")
	}()
	g.Expect(gitsync(t, "reconcile", "source", "app-repo", "-n", f.ns).code).To(Equal(0))
	g.Eventually(done).WithTimeout(3 * time.Minute).Should(Receive(&r))
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring("is synced (revision main@sha1:" + fixed + ")"))
}

// Without --revision, wait judges the source's newest revision: while a fix waits for a
// sync (autoSync off), the broken revision's failure before it does not end the wait, and
// the sync of the fix does.
func TestWaitIgnoresAnOlderRevisionsFailure(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)
	f.repo.Commit("main", "broken", brokenFiles())
	g.Expect(gitsync(t, "reconcile", "source", "app-repo", "-n", f.ns).code).To(Equal(0))
	r := gitsync(t, "wait", "app", "web", "-n", f.ns, "--for", "ready", "--timeout", "2m")
	g.Expect(r.code).To(Equal(1), r.String())
	g.Expect(r.err).To(ContainSubstring("failed: BuildFailed"))

	f.setAutoSync(t, false)
	fixed := f.repo.Commit("main", "fixed", fixedFiles())
	g.Expect(gitsync(t, "reconcile", "source", "app-repo", "-n", f.ns).code).To(Equal(0))
	for _, goal := range []string{"synced", "ready"} {
		r = gitsync(t, "wait", "app", "web", "-n", f.ns, "--for", goal, "--timeout", "3s")
		g.Expect(r.code).To(Equal(1), r.String())
		g.Expect(r.err).NotTo(ContainSubstring("failed: BuildFailed"), r.String())
		g.Expect(r.err).To(ContainSubstring("timed out after 3s waiting for Application " + f.ns + "/web to be " + goal + " at main@sha1:" + fixed))
	}

	done := make(chan result, 1)
	go func() {
		done <- gitsyncCtx(context.Background(), "wait", "app", "web", "-n", f.ns, "--for", "ready", "--timeout", "2m")
	}()
	rr := gitsync(t, "reconcile", "app", "web", "-n", f.ns, "--timeout", "40s")
	g.Expect(rr.code).To(Equal(0), rr.String()+gitsync(t, "get", "app", "web", "-n", f.ns, "-o", "yaml").out)
	g.Eventually(done).WithTimeout(3 * time.Minute).Should(Receive(&r))
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring("is ready (revision main@sha1:" + fixed + ")"))
}
