package integration

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/gitsync-dev/gitsync/internal/notify"
)

// An Application of two Git sources: its events name each source and its revision (a
// generic webhook's metadata, a Slack message's fields), and a commit status provider
// sets a status on the commit of each source that the sync applied, in each source's
// repository; a push to the second alone gets its own pending and success.
func TestNotificationOfSeveralSources(t *testing.T) {
	g := NewWithT(t)
	f := newNotifyFixture(t)
	second := f.srv.CreateRepo("org/second")
	sha2 := second.Commit("main", "initial", map[string]string{"b.yaml": configMapYAML("b", "one")})
	f.provider("hook", "generic", "/hook", nil)
	f.alert("hook", "hook")
	f.provider("chat", "slack", "/services/T/B/X", nil)
	f.alert("chat", "chat")
	f.provider("forge", "github", "", map[string]string{"token": "forge-token"})
	f.alert("forge", "forge")
	newGitRepository(t, f.ns, "second", f.srv.HTTPURL("org/second"), nil, "")
	f.app("app", withSources(gitSource("repo"), gitSource("second")))
	sha1 := f.start(map[string]string{"a.yaml": configMapYAML("a", "one")})
	rev := func(a, b string) string {
		return "GitRepository/repo@main@sha1:" + a + ";GitRepository/second@main@sha1:" + b
	}
	f.waitAppliedAt("app", rev(sha1, sha2))

	var p notify.GenericPayload
	g.Expect(json.Unmarshal(f.waitRequest("/hook", `"Applied"`).Body, &p)).To(Succeed())
	g.Expect(p.Metadata).To(HaveKeyWithValue("revision", rev(sha1, sha2)))
	g.Expect(p.Metadata).To(HaveKeyWithValue("revision.GitRepository/repo", "main@sha1:"+sha1))
	g.Expect(p.Metadata).To(HaveKeyWithValue("revision.GitRepository/second", "main@sha1:"+sha2))
	f.waitRequest("/services/T/B/X", "Applied", `"title":"source GitRepository/repo","value":"main@sha1:`+sha1,
		`"title":"source GitRepository/second","value":"main@sha1:`+sha2)

	// A status on each source's commit, in its own repository.
	r := f.waitRequest("/repos/org/app/statuses/"+sha1, `"state":"success"`)
	g.Expect(decode(t, r.Body)["context"]).To(Equal("gitsync/" + f.ns + "/app"))
	f.waitRequest("/repos/org/second/statuses/"+sha2, `"state":"success"`)

	// A push to the second source: pending, then success on its new commit.
	sha2b := second.Commit("main", "b two", map[string]string{"b.yaml": configMapYAML("b", "two")})
	f.waitAppliedAt("app", rev(sha1, sha2b))
	f.waitRequest("/repos/org/second/statuses/"+sha2b, `"state":"pending"`)
	f.waitRequest("/repos/org/second/statuses/"+sha2b, `"state":"success"`)
	g.Expect(f.count("/repos/org/app/statuses/"+sha2b)).To(BeZero(), "a status of the second source's commit in the first's repository")
}
