package cli

import (
	"testing"

	. "github.com/onsi/gomega"
)

// diff app and diff source at another revision of the GitRepository (a pull request's
// branch, a commit of it): exit 1 on changes, 0 on none, 2 on an error or an
// Application that fails; the source's table is the preview comment's.
func TestDiffRevision(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)
	head := f.repo.Commit("feature", "new image", appFiles("nginx:2.0", "old-s3cret-value"))

	r := gitsync(t, "diff", "app", "web", "-n", f.ns, "--revision", "feature")
	g.Expect(r.code).To(Equal(1), r.String())
	g.Expect(r.out).To(ContainSubstring("revision feature@sha1:" + head))
	g.Expect(r.out).To(ContainSubstring("configured Deployment/" + f.ns + "/web\n    " + imageField + "\n"))

	r = gitsync(t, "diff", "app", "web", "-n", f.ns, "--revision", "feature@sha1:"+head)
	g.Expect(r.code).To(Equal(1), r.String())
	r = gitsync(t, "diff", "app", "web", "-n", f.ns, "--revision", "main")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring("no changes (3 unchanged)"))

	r = gitsync(t, "diff", "source", "app-repo", "-n", f.ns, "--revision", "feature")
	g.Expect(r.code).To(Equal(1), r.String())
	g.Expect(r.out).To(ContainSubstring("GitRepository " + f.ns + "/app-repo, revision feature@sha1:" + head))
	g.Expect(r.out).To(MatchRegexp(`APPLICATION\s+CREATED\s+CONFIGURED\s+PRUNED\s+UNCHANGED\s+RESULT`))
	g.Expect(r.out).To(MatchRegexp(f.ns + `/web\s+0\s+1\s+0\s+2\s+changes`))
	g.Expect(r.out).To(ContainSubstring(imageField))
	g.Expect(r.out).NotTo(ContainSubstring("s3cret"))

	r = gitsync(t, "diff", "source", "app-repo", "-n", f.ns, "--revision", "main")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(MatchRegexp(f.ns + `/web\s+0\s+0\s+0\s+3\s+no changes`))

	files := appFiles("nginx:1.0", "old-s3cret-value")
	files["app/broken.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: [name: x\n"
	f.repo.Commit("broken", "broken", files)
	r = gitsync(t, "diff", "source", "app-repo", "-n", f.ns, "--revision", "broken")
	g.Expect(r.code).To(Equal(2), r.String())
	g.Expect(r.out).To(MatchRegexp(f.ns + `/web\s+-\s+-\s+-\s+-\s+error`))
	g.Expect(r.err).To(ContainSubstring("1 of 1 Applications would fail"))

	g.Expect(gitsync(t, "diff", "source", "app-repo", "-n", f.ns, "--revision", "no-such-branch").code).To(Equal(2))
	g.Expect(gitsync(t, "diff", "source", "app-repo", "-n", f.ns).code).To(Equal(2))
	g.Expect(gitsync(t, "diff", "app", "web", "-n", f.ns, "--revision", "feature", "--path", "x").code).To(Equal(2))
}
