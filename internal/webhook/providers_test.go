package webhook

import (
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParsers(t *testing.T) {
	cases := []struct {
		name    string
		parse   func([]byte) (push, error)
		file    string
		urls    []string
		refs    []string
		defBran string
	}{
		{"github", parseGitHub, "github-push.json", []string{
			"https://github.com/acme/platform-config.git",
			"git@github.com:acme/platform-config.git",
			"https://github.com/acme/platform-config",
			"git://github.com/acme/platform-config.git",
		}, []string{"refs/heads/main"}, "main"},
		{"gitlab", parseGitLab, "gitlab-push.json", []string{
			"https://gitlab.example.com/acme/infra/platform-config.git",
			"git@gitlab.example.com:acme/infra/platform-config.git",
			"https://gitlab.example.com/acme/infra/platform-config",
			"https://gitlab.example.com/acme/infra/platform-config.git",
			"git@gitlab.example.com:acme/infra/platform-config.git",
			"https://gitlab.example.com/acme/infra/platform-config.git",
			"git@gitlab.example.com:acme/infra/platform-config.git",
			"https://gitlab.example.com/acme/infra/platform-config",
			"git@gitlab.example.com:acme/infra/platform-config.git",
		}, []string{"refs/heads/main"}, "main"},
		{"gitlab tag", parseGitLab, "gitlab-tag-push.json", nil, []string{"refs/tags/v1.2.0"}, "main"},
		{"gitea", parseGitea, "gitea-push.json", []string{
			"https://gitea.example.com/acme/platform-config.git",
			"ssh://git@gitea.example.com:2222/acme/platform-config.git",
			"https://gitea.example.com/acme/platform-config",
		}, []string{"refs/heads/main"}, "main"},
		{"bitbucket", parseBitbucket, "bitbucket-push.json", []string{
			"ssh://git@bitbucket.example.com:7999/plat/platform-config.git",
			"https://bitbucket.example.com/scm/plat/platform-config.git",
		}, []string{"refs/heads/main"}, ""},
		{"generic", parseGeneric, "generic-push.json", []string{
			"https://git.example.com/acme/platform-config.git",
		}, []string{"refs/heads/main"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			p, err := c.parse(readTestdata(t, c.file))
			g.Expect(err).NotTo(HaveOccurred())
			if c.urls != nil {
				g.Expect(p.urls).To(Equal(c.urls))
			}
			g.Expect(p.refs).To(Equal(c.refs))
			g.Expect(p.defaultBranch).To(Equal(c.defBran))
		})
	}
}

func TestParseBitbucketSeveralChanges(t *testing.T) {
	g := NewWithT(t)
	p, err := parseBitbucket([]byte(`{
		"repository": {"links": {"clone": [{"href": "https://bb.example.com/scm/p/r.git", "name": "http"}]}},
		"changes": [
			{"ref": {"id": "refs/heads/main", "displayId": "main", "type": "BRANCH"}, "refId": "refs/heads/main", "type": "UPDATE"},
			{"refId": "refs/tags/v2.0.0", "type": "ADD"},
			{"ref": {"displayId": "dev", "type": "BRANCH"}, "type": "ADD"}
		]}`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.refs).To(Equal([]string{"refs/heads/main", "refs/tags/v2.0.0", "refs/heads/dev"}))
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name  string
		parse func([]byte) (push, error)
		body  string
	}{
		{"github not json", parseGitHub, `ref=refs/heads/main`},
		{"github no ref", parseGitHub, `{"repository": {"clone_url": "https://github.com/a/b.git"}}`},
		{"github no url", parseGitHub, `{"ref": "refs/heads/main", "repository": {}}`},
		{"github ref of wrong type", parseGitHub, `{"ref": 7, "repository": {"clone_url": "https://github.com/a/b.git"}}`},
		{"github array", parseGitHub, `[]`},
		{"gitlab no url", parseGitLab, `{"ref": "refs/heads/main"}`},
		{"gitlab truncated", parseGitLab, `{"ref": "refs/heads/main", "project": {`},
		{"gitea no ref", parseGitea, `{"repository": {"clone_url": "https://gitea.example.com/a/b.git"}}`},
		{"bitbucket no changes", parseBitbucket, `{"repository": {"links": {"clone": [{"href": "https://bb.example.com/scm/p/r.git"}]}}, "changes": []}`},
		{"bitbucket no links", parseBitbucket, `{"changes": [{"refId": "refs/heads/main"}]}`},
		{"bitbucket clone not a list", parseBitbucket, `{"repository": {"links": {"clone": {"href": "x"}}}, "changes": [{"refId": "refs/heads/main"}]}`},
		{"generic no url", parseGeneric, `{"ref": "refs/heads/main"}`},
		{"generic no ref", parseGeneric, `{"url": "https://git.example.com/a/b.git"}`},
		{"generic short ref", parseGeneric, `{"url": "https://git.example.com/a/b.git", "ref": "main"}`},
		{"generic empty", parseGeneric, ``},
		{"generic null", parseGeneric, `null`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.parse([]byte(c.body))
			NewWithT(t).Expect(errors.Is(err, errPayload)).To(BeTrue(), "error: %v", err)
		})
	}
}

func TestFormPayload(t *testing.T) {
	g := NewWithT(t)
	js := readTestdata(t, "github-push.json")
	h := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	body := []byte(url.Values{"payload": {string(js)}}.Encode())
	got, err := providers["github"].parse(h, body)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.refs).To(Equal([]string{"refs/heads/main"}))

	_, err = providers["github"].parse(h, []byte("other=1"))
	g.Expect(errors.Is(err, errPayload)).To(BeTrue())
	_, err = providers["gitea"].parse(h, []byte("%zz"))
	g.Expect(errors.Is(err, errPayload)).To(BeTrue())
}

// fuzzParser checks that a parser never panics, and that what it accepts is
// usable: at least one URL and one ref, none empty.
func fuzzParser(f *testing.F, parse func([]byte) (push, error), seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(``))
	f.Add([]byte(`null`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"ref": {"nested": [1, 2, {"x": null}]}}`))
	f.Add([]byte(`{"ref": "refs/heads/\u0000", "url": "\ud800"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := parse(body)
		if err != nil {
			if !errors.Is(err, errPayload) {
				t.Fatalf("error does not wrap errPayload: %v", err)
			}
			return
		}
		if len(p.urls) == 0 || len(p.refs) == 0 {
			t.Fatalf("accepted a push without URL or ref: %+v", p)
		}
		for _, u := range p.urls {
			if u == "" {
				t.Fatal("empty URL")
			}
			_ = NormalizeURL(u)
		}
		for _, r := range p.refs {
			if r == "" {
				t.Fatal("empty ref")
			}
			_ = wants(Repository{}, []string{r}, p.defaultBranch)
		}
	})
}

func FuzzParseGitHub(f *testing.F) {
	fuzzParser(f, parseGitHub,
		string(readTestdata(f, "github-push.json")),
		string(readTestdata(f, "github-ping.json")),
		`{"ref": "refs/heads/main", "repository": {"ssh_url": "git@github.com:a/b.git"}}`,
		`{"ref": 1, "repository": []}`)
}

func FuzzParseGitLab(f *testing.F) {
	fuzzParser(f, parseGitLab,
		string(readTestdata(f, "gitlab-push.json")),
		string(readTestdata(f, "gitlab-tag-push.json")),
		`{"ref": "refs/heads/main", "repository": {"url": "git@gitlab.com:a/b.git"}}`,
		`{"ref": "refs/heads/main", "project": "x"}`)
}

func FuzzParseGitea(f *testing.F) {
	fuzzParser(f, parseGitea,
		string(readTestdata(f, "gitea-push.json")),
		`{"ref": "refs/tags/v1", "repository": {"html_url": "https://gitea.example.com/a/b"}}`,
		`{"ref": "refs/heads/main", "repository": null}`)
}

func FuzzParseBitbucket(f *testing.F) {
	fuzzParser(f, parseBitbucket,
		string(readTestdata(f, "bitbucket-push.json")),
		string(readTestdata(f, "bitbucket-ping.json")),
		`{"repository": {"links": {"clone": [{"href": "https://bb/scm/p/r.git"}]}}, "changes": [{"ref": {"displayId": "v1", "type": "TAG"}}]}`,
		`{"repository": {"links": {"clone": [null]}}, "changes": [null, {}]}`)
}

func FuzzParseGeneric(f *testing.F) {
	fuzzParser(f, parseGeneric,
		string(readTestdata(f, "generic-push.json")),
		`{"url": "git@example.com:a/b.git", "ref": "refs/tags/v1.0.0"}`,
		`{"url": "https://example.com/a/b", "ref": "main"}`)
}

func FuzzNormalizeURL(f *testing.F) {
	for _, s := range []string{
		"https://github.com/acme/platform-config.git",
		"git@github.com:acme/platform-config.git",
		"ssh://git@[::1]:2222/org/repo.git",
		"git@[::1]:org/repo",
		"file:///srv/git/repo.git",
		"a@b@c:d",
		"[:",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if n := NormalizeURL(raw); n != "" && !strings.Contains(n, "/") {
			t.Fatalf("NormalizeURL(%q) = %q: no path", raw, n)
		}
	})
}
