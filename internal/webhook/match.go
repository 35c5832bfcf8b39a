package webhook

import (
	"net/url"
	"strings"
)

// NormalizeURL reduces a Git remote URL to the form that two URLs of the same
// repository share: lower-case host, "/", lower-case path without leading or
// trailing slashes and without one ".git" suffix.
//
// It accepts https, http, ssh, git and file URLs and the scp-like form
// ("git@host:org/repo.git"). The scheme, user, password and port are dropped,
// so https://github.com/org/repo, ssh://git@github.com:22/org/repo.git and
// git@GitHub.com:org/repo.git are equal.
//
// The path is lower-cased because GitHub, GitLab, Gitea and Bitbucket Server
// all look repository paths up case-insensitively, while users and payloads
// spell them in different cases. On a server with case-sensitive paths two
// repositories that differ only in case would match each other; that costs at
// most one extra poll, and never bypasses a webhook secret.
//
// Ports are dropped too: Bitbucket Server serves the same repository on
// :7999 (ssh) and :443 (https, under /scm/), and the web and clone ports of
// one host differ in practice. Two different servers on one host, told apart
// only by port, would match each other (again: one extra poll at most).
//
// NormalizeURL returns "" for input it cannot read; "" never matches.
func NormalizeURL(raw string) string {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return ""
	}
	var host, path string
	if h, p, ok := splitSCPLike(raw); ok {
		host, path = h, p
	} else {
		u, err := url.Parse(raw)
		if err != nil || u.Scheme == "" || u.Opaque != "" {
			return ""
		}
		host, path = u.Hostname(), u.Path
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	path = strings.Trim(path, "/")
	path = strings.TrimSuffix(path, ".git")
	path = strings.ToLower(strings.Trim(path, "/"))
	if path == "" || strings.ContainsAny(host, "/\\ ") {
		return ""
	}
	return host + "/" + path
}

// splitSCPLike splits git's scp-like syntax, [user@]host:path, which git
// accepts when there is no "://" and the first ":" comes before the first "/".
// An IPv6 host is written in brackets: git@[::1]:org/repo.
func splitSCPLike(raw string) (host, path string, ok bool) {
	if strings.Contains(raw, "://") {
		return "", "", false
	}
	rest := raw
	if at := strings.Index(rest, "@"); at >= 0 && !strings.Contains(rest[:at], "/") {
		rest = rest[at+1:]
	}
	if strings.HasPrefix(rest, "[") {
		end := strings.Index(rest, "]:")
		if end < 0 || strings.Contains(rest[:end], "/") {
			return "", "", false
		}
		return rest[1:end], rest[end+2:], true
	}
	colon := strings.Index(rest, ":")
	if colon <= 0 || strings.Contains(rest[:colon], "/") {
		return "", "", false
	}
	return rest[:colon], rest[colon+1:], true
}

// refKind is what a repository's spec.ref follows, for waking purposes.
type refKind int

const (
	followsDefault refKind = iota // no ref: the remote's default branch
	followsBranch                 // branch, or commit within a branch
	followsTag                    // one tag
	followsSemVer                 // the highest tag within a range
	followsCommit                 // a bare commit: a push never changes it
)

// follows classifies a repository's ref and returns the branch or tag name it
// names (without refs/heads/ or refs/tags/). It mirrors the precedence of
// internal/source: semver, tag, branch (with or without commit), bare commit.
func follows(r Repository) (refKind, string) {
	branch := strings.TrimPrefix(strings.TrimSpace(r.Branch), "refs/heads/")
	tag := strings.TrimPrefix(strings.TrimSpace(r.Tag), "refs/tags/")
	switch {
	case strings.TrimSpace(r.SemVer) != "":
		return followsSemVer, ""
	case tag != "":
		return followsTag, tag
	case branch != "":
		return followsBranch, branch
	case strings.TrimSpace(r.Commit) != "":
		return followsCommit, ""
	}
	return followsDefault, ""
}

// wants reports whether a push of the given refs should wake repository r:
//   - refs/heads/B wakes repositories following branch B (with or without a
//     pinned commit), and repositories with no ref when B is the remote's
//     default branch. When the payload does not name the default branch
//     (Bitbucket Server, generic), any branch push wakes them: the receiver
//     cannot know the default branch, and a needless wake costs one ls-remote.
//   - refs/tags/T wakes repositories following tag T and every semver
//     repository (a new or moved tag may change the highest match).
//   - any other ref (refs/pull/…, refs/merge-requests/…, notes) wakes nothing,
//     and neither does anything for a repository pinned to a bare commit.
func wants(r Repository, refs []string, defaultBranch string) bool {
	kind, name := follows(r)
	for _, ref := range refs {
		if b, ok := strings.CutPrefix(ref, "refs/heads/"); ok && b != "" {
			switch kind {
			case followsBranch:
				if b == name {
					return true
				}
			case followsDefault:
				if defaultBranch == "" || b == defaultBranch {
					return true
				}
			}
			continue
		}
		if t, ok := strings.CutPrefix(ref, "refs/tags/"); ok && t != "" {
			switch kind {
			case followsSemVer:
				return true
			case followsTag:
				if t == name {
					return true
				}
			}
		}
	}
	return false
}

// candidates returns the repositories whose spec.url names one of the
// payload's repository URLs, whatever their ref.
func candidates(repos []Repository, urls []string) []Repository {
	keys := make(map[string]bool, len(urls))
	for _, u := range urls {
		if k := NormalizeURL(u); k != "" {
			keys[k] = true
		}
	}
	var out []Repository
	for _, r := range repos {
		if k := NormalizeURL(r.URL); k != "" && keys[k] {
			out = append(out, r)
		}
	}
	return out
}
