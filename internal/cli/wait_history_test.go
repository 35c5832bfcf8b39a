package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// One failed revision is one Failed row in `history`, however often it is retried, with
// the failure as its message; a successful sync's row says what it changed.
func TestHistoryOneRowPerFailedRevision(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)
	rev := "main@sha1:" + f.sha
	broken := "main@sha1:" + f.repo.Commit("main", "broken", brokenFiles())
	g.Expect(gitsync(t, "reconcile", "source", "app-repo", "-n", f.ns).code).To(Equal(0))
	for range 2 { // two more attempts at the same revision
		r := gitsync(t, "reconcile", "app", "web", "-n", f.ns)
		g.Expect(r.code).To(Equal(1), r.String())
		g.Expect(r.err).To(ContainSubstring("failed: BuildFailed"))
	}

	app := &gitsyncv1.Application{}
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(f.app), app)).To(Succeed())
		g.Expect(app.Status.LastAttemptedRevision).To(Equal(broken))
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	var revisions []string
	for _, h := range app.Status.History {
		revisions = append(revisions, h.Revision+" "+h.Result)
	}
	g.Expect(revisions).To(Equal([]string{broken + " Failed", rev + " Succeeded"}))
	g.Expect(app.Status.History[0].Message).To(ContainSubstring("broken.yaml"))
	g.Expect(app.Status.History[1].Message).To(Equal("ConfigMap/" + f.ns + "/settings created, Deployment/" + f.ns + "/web created, Secret/" + f.ns + "/creds created"))

	r := gitsync(t, "history", "app", "web", "-n", f.ns)
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(strings.Count(r.out, "Failed")).To(Equal(1), r.out)
	g.Expect(r.out).To(MatchRegexp(`(?m)^` + broken + `\s+Failed\s+.*building \./app at ` + broken + `.*broken\.yaml`))
}
