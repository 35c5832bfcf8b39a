package webhook

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestNormalizeURL(t *testing.T) {
	const want = "github.com/acme/platform-config"
	cases := []struct {
		in, want string
	}{
		{"https://github.com/acme/platform-config", want},
		{"https://github.com/acme/platform-config.git", want},
		{"https://github.com/acme/platform-config/", want},
		{"https://github.com/acme/platform-config.git/", want},
		{"http://github.com/acme/platform-config", want},
		{"https://GitHub.COM/acme/platform-config", want},
		{"https://github.com/Acme/Platform-Config.git", want},
		{"https://user:s3cret@github.com/acme/platform-config.git", want},
		{"https://github.com:443/acme/platform-config", want},
		{"https://github.com:8443/acme/platform-config", want},
		{"ssh://git@github.com/acme/platform-config.git", want},
		{"ssh://git@github.com:22/acme/platform-config.git", want},
		{"ssh://git@github.com:2222/acme/platform-config", want},
		{"git@github.com:acme/platform-config.git", want},
		{"git@GITHUB.com:acme/platform-config", want},
		{"github.com:acme/platform-config.git", want},
		{"git@github.com:/acme/platform-config.git", want},
		{"git://github.com/acme/platform-config.git", want},
		{"  https://github.com/acme/platform-config.git\n", want},
		{"https://github.com./acme/platform-config", want},

		// Nested groups and Bitbucket Server's two spellings.
		{"https://gitlab.example.com/acme/infra/platform-config.git", "gitlab.example.com/acme/infra/platform-config"},
		{"git@gitlab.example.com:acme/infra/platform-config.git", "gitlab.example.com/acme/infra/platform-config"},
		{"ssh://git@bitbucket.example.com:7999/PLAT/platform-config.git", "bitbucket.example.com/plat/platform-config"},
		{"https://bitbucket.example.com/scm/plat/platform-config.git", "bitbucket.example.com/scm/plat/platform-config"},

		// IP hosts.
		{"http://127.0.0.1:38211/repo.git", "127.0.0.1/repo"},
		{"ssh://git@[::1]:2222/org/repo.git", "::1/org/repo"},
		{"git@[::1]:org/repo.git", "::1/org/repo"},

		// Only one .git is dropped; other suffixes stay.
		{"https://example.com/org/repo.git.git", "example.com/org/repo.git"},
		{"https://example.com/org/repo.github", "example.com/org/repo.github"},

		{"file:///srv/git/repo.git", "/srv/git/repo"},

		// Unreadable: never matches anything.
		{"", ""},
		{"   ", ""},
		{"https://github.com", ""},
		{"https://github.com/", ""},
		{"https://github.com/.git", ""},
		{"/srv/git/repo.git", ""},
		{"relative/path", ""},
		{"mailto:someone@example.com", ""},
		{"https://bad host/org/repo", ""},
		{"https://[::1/org/repo", ""},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			NewWithT(t).Expect(NormalizeURL(c.in)).To(Equal(c.want))
		})
	}
}

func TestNormalizeURLDistinguishes(t *testing.T) {
	g := NewWithT(t)
	g.Expect(NormalizeURL("https://github.com/acme/a")).NotTo(Equal(NormalizeURL("https://github.com/acme/b")))
	g.Expect(NormalizeURL("https://github.com/acme/a")).NotTo(Equal(NormalizeURL("https://gitlab.com/acme/a")))
	g.Expect(NormalizeURL("https://github.com/acme/a")).NotTo(Equal(NormalizeURL("https://github.com/other/acme/a")))
	g.Expect(NormalizeURL("https://github.com/acme/a")).NotTo(Equal(NormalizeURL("https://github.com/acme/a/b")))
}

func TestWants(t *testing.T) {
	const sha = "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c"
	var (
		defaultRef  = Repository{}
		main        = Repository{Branch: "main"}
		mainFull    = Repository{Branch: "refs/heads/main"}
		dev         = Repository{Branch: "dev"}
		commitMain  = Repository{Branch: "main", Commit: sha}
		commitOnly  = Repository{Commit: sha}
		tag120      = Repository{Tag: "v1.2.0"}
		tag120Full  = Repository{Tag: "refs/tags/v1.2.0"}
		tag090      = Repository{Tag: "v0.9.0"}
		semverRange = Repository{SemVer: ">=1.0.0"}
	)
	cases := []struct {
		name          string
		repo          Repository
		refs          []string
		defaultBranch string
		want          bool
	}{
		{"branch push wakes that branch", main, []string{"refs/heads/main"}, "main", true},
		{"branch given as full ref", mainFull, []string{"refs/heads/main"}, "", true},
		{"branch push wakes commit within that branch", commitMain, []string{"refs/heads/main"}, "", true},
		{"other branch", dev, []string{"refs/heads/main"}, "main", false},
		{"branch names are case-sensitive", main, []string{"refs/heads/Main"}, "", false},
		{"branch prefix is not enough", main, []string{"refs/heads/main-2"}, "", false},
		{"no ref, push to default branch", defaultRef, []string{"refs/heads/main"}, "main", true},
		{"no ref, push to another branch when default known", defaultRef, []string{"refs/heads/dev"}, "main", false},
		{"no ref, default unknown: any branch wakes", defaultRef, []string{"refs/heads/dev"}, "", true},
		{"no ref, tag push", defaultRef, []string{"refs/tags/v1.2.0"}, "", false},
		{"bare commit never", commitOnly, []string{"refs/heads/main"}, "", false},
		{"bare commit never, tag", commitOnly, []string{"refs/tags/v1.2.0"}, "", false},
		{"tag push wakes that tag", tag120, []string{"refs/tags/v1.2.0"}, "", true},
		{"tag given as full ref", tag120Full, []string{"refs/tags/v1.2.0"}, "", true},
		{"other tag", tag090, []string{"refs/tags/v1.2.0"}, "", false},
		{"tag push wakes any semver", semverRange, []string{"refs/tags/v0.1.0"}, "", true},
		{"branch push does not wake semver", semverRange, []string{"refs/heads/main"}, "", false},
		{"branch push does not wake tag", tag120, []string{"refs/heads/v1.2.0"}, "", false},
		{"tag push does not wake branch of that name", main, []string{"refs/tags/main"}, "", false},
		{"pull request ref", main, []string{"refs/pull/12/head"}, "main", false},
		{"merge request ref", defaultRef, []string{"refs/merge-requests/3/head"}, "", false},
		{"empty branch name", defaultRef, []string{"refs/heads/"}, "", false},
		{"one of several refs", dev, []string{"refs/heads/main", "refs/heads/dev"}, "", true},
		{"no refs", main, nil, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			NewWithT(t).Expect(wants(c.repo, c.refs, c.defaultBranch)).To(Equal(c.want))
		})
	}
}

func TestCandidates(t *testing.T) {
	g := NewWithT(t)
	repos := []Repository{
		{Namespace: "a", Name: "ssh", URL: "ssh://git@github.com/acme/platform-config.git"},
		{Namespace: "b", Name: "scp", URL: "git@github.com:Acme/Platform-Config"},
		{Namespace: "c", Name: "other", URL: "https://github.com/acme/other.git"},
		{Namespace: "d", Name: "broken", URL: ""},
	}
	got := candidates(repos, []string{"https://github.com/acme/platform-config.git", "", "not a url"})
	g.Expect(got).To(HaveLen(2))
	g.Expect(got[0].Name).To(Equal("ssh"))
	g.Expect(got[1].Name).To(Equal("scp"))
	g.Expect(candidates(repos, nil)).To(BeEmpty())
}
