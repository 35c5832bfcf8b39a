package source

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestDirName(t *testing.T) {
	const commit = "0123456789abcdef0123456789abcdef01234567"
	withMD := DirName("", commit, []string{"*.md"})

	tests := []struct {
		name   string
		ignore []string
		want   string
	}{
		{name: "no ignore", ignore: nil, want: commit},
		{name: "only blanks and comments", ignore: []string{"", "  ", "# a comment"}, want: commit},
		{name: "upper-case commit", ignore: nil, want: commit},
		{name: "same lines, other whitespace", ignore: []string{"  *.md  ", ""}, want: withMD},
		{name: "same lines in one block", ignore: []string{"# docs\n*.md\n"}, want: withMD},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := commit
			if tt.name == "upper-case commit" {
				c = strings.ToUpper(commit)
			}
			g.Expect(DirName("", c, tt.ignore)).To(Equal(tt.want))
		})
	}

	g := NewWithT(t)
	g.Expect(withMD).To(MatchRegexp("^" + commit + "-[0-9a-f]{12}$"))
	g.Expect(DirName("", commit, []string{"*.md", "/secret/"})).NotTo(Equal(withMD))
	// Order matters in gitignore (a later "!" line overrides), so it does here.
	g.Expect(DirName("", commit, []string{"*.md", "!README.md"})).
		NotTo(Equal(DirName("", commit, []string{"!README.md", "*.md"})))
}

func TestNormaliseIgnore(t *testing.T) {
	g := NewWithT(t)
	got := normaliseIgnore([]string{"# header\n*.md\r\n\n  /secret/  ", "trailing\\ ", "!keep.md"})
	g.Expect(got).To(Equal([]string{"*.md", "/secret/", "trailing\\ ", "!keep.md"}))
	g.Expect(normaliseIgnore(nil)).To(BeEmpty())
}

func TestIgnoreMatcher(t *testing.T) {
	m := newIgnoreMatcher(normaliseIgnore([]string{"*.md", "!KEEP.md", "/secret/", "build/", "docs/**/*.png"}))
	tests := []struct {
		path  string
		isDir bool
		want  bool
	}{
		{"README.md", false, true},
		{"sub/notes.md", false, true},
		{"KEEP.md", false, false},
		{"secret", true, true},
		{"nested/secret", true, false},
		{"secret", false, false}, // a file named like the directory pattern
		{"build", true, true},
		{"app/build", true, true},
		{"docs/a/b/c.png", false, true},
		{"docs/c.yaml", false, false},
		{"app/deploy.yaml", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			NewWithT(t).Expect(m.ignored(strings.Split(tt.path, "/"), tt.isDir)).To(Equal(tt.want))
		})
	}
	NewWithT(t).Expect(newIgnoreMatcher(nil).ignored([]string{"x"}, false)).To(BeFalse())
}

// A checkout is named after the repository identity that fetched it.
func TestDirNameByRepository(t *testing.T) {
	commit := "0123456789abcdef0123456789abcdef01234567"
	a := RepositoryKey("https://git.example.com/team-a/private", "team-a/creds")
	b := RepositoryKey("https://git.example.com/team-b/public", "")
	if a == b || DirName(a, commit, nil) == DirName(b, commit, nil) {
		t.Fatal("two repositories share a checkout name")
	}
	if RepositoryKey("HTTPS://Git.Example.com/team-a/private/", "team-a/creds") != a {
		t.Fatal("the URL's scheme and host case and a trailing slash change the key")
	}
	if RepositoryKey("https://git.example.com/team-a/private", "team-b/creds") == a {
		t.Fatal("other credentials, same key")
	}
}
