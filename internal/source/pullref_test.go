package source

import (
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// A full ref name other than a tag (a forge's pull request head) resolves as itself; a
// branch name as refs/heads/<name>.
func TestResolvePullRequestRef(t *testing.T) {
	pull := plumbing.NewHash("1111111111111111111111111111111111111111")
	main := plumbing.NewHash("2222222222222222222222222222222222222222")
	rr := remoteRefs{refs: map[string]plumbing.Hash{"refs/pull/7/head": pull, "refs/heads/main": main,
		"refs/merge-requests/3/head": pull}}
	for _, tt := range []struct {
		ref  Ref
		want plumbing.Hash
		name string
	}{
		{Ref{Branch: "refs/pull/7/head"}, pull, "refs/pull/7/head"},
		{Ref{Branch: "refs/merge-requests/3/head", Commit: pull.String()}, pull, "refs/merge-requests/3/head"},
		{Ref{Branch: "main"}, main, "main"},
		{Ref{Branch: "refs/heads/main"}, main, "main"},
	} {
		r, err := tt.ref.normalise()
		if err != nil {
			t.Fatal(err)
		}
		got, err := resolve(rr, r)
		if err != nil {
			t.Fatalf("%v: %v", tt.ref, err)
		}
		if got.want != tt.want || got.name != tt.name {
			t.Errorf("%v: got %s %q, want %s %q", tt.ref, got.want, got.name, tt.want, tt.name)
		}
	}
	if _, err := resolve(rr, Ref{Branch: "refs/pull/8/head"}); err == nil {
		t.Error("a missing pull request ref resolved")
	}
}
