package source

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	. "github.com/onsi/gomega"
)

func TestLatestTag(t *testing.T) {
	tags := []string{"v0.9.0", "v1.0.0", "v1.2.0", "v2.0.0", "latest", "v1.3.0-rc.1", "release-1.9"}
	tests := []struct {
		name       string
		tags       []string
		constraint string
		want       string
		wantErr    error
	}{
		{name: "highest in range", tags: tags, constraint: ">=1.0.0 <2.0.0", want: "v1.2.0"},
		{name: "highest overall", tags: tags, constraint: "*", want: "v2.0.0"},
		{name: "tilde", tags: tags, constraint: "~0.9", want: "v0.9.0"},
		{name: "prerelease only when asked", tags: tags, constraint: ">=1.3.0-0 <2.0.0", want: "v1.3.0-rc.1"},
		{name: "without v prefix", tags: []string{"1.0.0", "1.1.0", "0.1.0"}, constraint: "^1", want: "1.1.0"},
		{name: "equal versions pick the first name", tags: []string{"v1.0.0", "1.0.0"}, constraint: "1.0.0", want: "1.0.0"},
		{name: "no match", tags: tags, constraint: ">=3.0.0", wantErr: ErrRefNotFound},
		{name: "no tags", tags: nil, constraint: "*", wantErr: ErrRefNotFound},
		{name: "bad range", tags: tags, constraint: "not a range", wantErr: ErrRefInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := latestTag(tt.tags, tt.constraint)
			if tt.wantErr != nil {
				g.Expect(errors.Is(err, tt.wantErr)).To(BeTrue(), "error: %v", err)
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestRefNormalise(t *testing.T) {
	commit := strings.Repeat("ab", 20)
	tests := []struct {
		name    string
		ref     Ref
		want    Ref
		wantErr bool
	}{
		{name: "empty", ref: Ref{}, want: Ref{}},
		{name: "branch prefix", ref: Ref{Branch: "refs/heads/main"}, want: Ref{Branch: "main"}},
		{name: "tag prefix", ref: Ref{Tag: "refs/tags/v1"}, want: Ref{Tag: "v1"}},
		{name: "commit upper case", ref: Ref{Commit: strings.ToUpper(commit)}, want: Ref{Commit: commit}},
		{name: "commit and branch", ref: Ref{Branch: "main", Commit: commit}, want: Ref{Branch: "main", Commit: commit}},
		{name: "branch and tag", ref: Ref{Branch: "main", Tag: "v1"}, wantErr: true},
		{name: "tag and semver", ref: Ref{Tag: "v1", SemVer: "*"}, wantErr: true},
		{name: "commit and tag", ref: Ref{Tag: "v1", Commit: commit}, wantErr: true},
		{name: "short commit", ref: Ref{Commit: "abcdef1"}, wantErr: true},
		{name: "non-hex commit", ref: Ref{Commit: strings.Repeat("zz", 20)}, wantErr: true},
		{name: "bad semver", ref: Ref{SemVer: ">>1"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := tt.ref.normalise()
			if tt.wantErr {
				g.Expect(errors.Is(err, ErrRefInvalid)).To(BeTrue(), "error: %v", err)
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestResolve(t *testing.T) {
	h := func(c string) plumbing.Hash { return plumbing.NewHash(strings.Repeat(c, 40)) }
	rr := remoteRefs{
		refs: map[string]plumbing.Hash{
			"refs/heads/main":     h("1"),
			"refs/heads/develop":  h("2"),
			"refs/tags/v1.0.0":    h("1"),
			"refs/tags/v1.1.0":    h("a"), // annotated
			"refs/tags/v2.0.0":    h("2"),
			"refs/tags/nightly":   h("2"),
			"refs/pull/1/head":    h("3"),
			"refs/tags/v1.5.0-rc": h("3"),
		},
		peeled: map[string]plumbing.Hash{"refs/tags/v1.1.0": h("4")},
		head:   "refs/heads/develop",
		headID: h("2"),
	}
	tests := []struct {
		name     string
		ref      Ref
		revision string
		want     plumbing.Hash
		depth    int
		wantErr  error
	}{
		{name: "branch", ref: Ref{Branch: "main"}, revision: "main@sha1:" + h("1").String(), want: h("1"), depth: 1},
		{name: "lightweight tag", ref: Ref{Tag: "v1.0.0"}, revision: "v1.0.0@sha1:" + h("1").String(), want: h("1"), depth: 1},
		{name: "annotated tag peels", ref: Ref{Tag: "v1.1.0"}, revision: "v1.1.0@sha1:" + h("4").String(), want: h("a"), depth: 1},
		{name: "semver", ref: Ref{SemVer: "~1"}, revision: "v1.1.0@sha1:" + h("4").String(), want: h("a"), depth: 1},
		{name: "default branch", ref: Ref{}, revision: "develop@sha1:" + h("2").String(), want: h("2"), depth: 1},
		{name: "commit at tip", ref: Ref{Branch: "main", Commit: h("1").String()}, revision: "main@sha1:" + h("1").String(), want: h("1"), depth: 1},
		{name: "commit below tip", ref: Ref{Branch: "main", Commit: h("9").String()}, revision: "main@sha1:" + h("9").String(), want: h("1"), depth: 0},
		{name: "commit in default branch", ref: Ref{Commit: h("9").String()}, revision: "sha1:" + h("9").String(), want: h("2"), depth: 0},
		{name: "missing branch", ref: Ref{Branch: "nope"}, wantErr: ErrRefNotFound},
		{name: "missing tag", ref: Ref{Tag: "v9"}, wantErr: ErrRefNotFound},
		{name: "no semver match", ref: Ref{SemVer: ">5"}, wantErr: ErrRefNotFound},
		{name: "commit in missing branch", ref: Ref{Branch: "nope", Commit: h("1").String()}, wantErr: ErrRefNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := resolve(rr, tt.ref)
			if tt.wantErr != nil {
				g.Expect(errors.Is(err, tt.wantErr)).To(BeTrue(), "error: %v", err)
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.revision()).To(Equal(tt.revision))
			g.Expect(got.want).To(Equal(tt.want))
			g.Expect(got.depth).To(Equal(tt.depth))
		})
	}

	g := NewWithT(t)
	_, err := resolve(remoteRefs{refs: map[string]plumbing.Hash{}}, Ref{})
	g.Expect(errors.Is(err, ErrRefNotFound)).To(BeTrue())
}

func TestGuessHead(t *testing.T) {
	g := NewWithT(t)
	one, two := plumbing.NewHash(strings.Repeat("1", 40)), plumbing.NewHash(strings.Repeat("2", 40))
	refs := map[string]plumbing.Hash{"refs/heads/b": one, "refs/heads/a": one, "refs/heads/master": two, "refs/tags/t": one}
	g.Expect(guessHead(refs, two)).To(Equal("refs/heads/master"))
	g.Expect(guessHead(refs, one)).To(Equal("refs/heads/a"))
	g.Expect(guessHead(refs, plumbing.NewHash(strings.Repeat("3", 40)))).To(BeEmpty())
}
