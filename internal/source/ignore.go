package source

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// normaliseIgnore splits the lines (an element may hold several, as a YAML
// block scalar does), trims surrounding whitespace (a trailing "\ " stays, as
// in gitignore) and drops blank lines and comments. Order is kept: a later
// "!pattern" overrides an earlier one.
func normaliseIgnore(ignore []string) []string {
	var out []string
	for _, block := range ignore {
		for line := range strings.SplitSeq(block, "\n") {
			line = strings.TrimLeft(line, " \t")
			line = strings.TrimRight(line, "\r\t")
			if !strings.HasSuffix(line, "\\ ") {
				line = strings.TrimRight(line, " \t")
			}
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			out = append(out, line)
		}
	}
	return out
}

// DirName is the name of the checkout directory of commit fetched for the repository
// key (see RepositoryKey) with the ignore lines applied: the key, the commit, and when
// something is ignored the first 12 hex digits of the SHA-256 of the normalised ignore
// lines. A checkout belongs to the repository identity that fetched it: another
// repository (another URL, or other credentials) with the same commit fetches it for
// itself, and so proves that its remote serves that commit to it.
func DirName(key, commit string, ignore []string) string {
	name := strings.ToLower(commit)
	if key != "" {
		name = key + "-" + name
	}
	lines := normaliseIgnore(ignore)
	if len(lines) == 0 {
		return name
	}
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return name + "-" + hex.EncodeToString(sum[:])[:12]
}

// RepositoryKey names a repository identity: the endpoint the URL dials, as the one parse
// of it reads it (scheme, ssh login name, host in lower case, port, path; see endpointID),
// and an identity of the credentials used (e.g. "<namespace>/<secret name>"; "" for
// none). 16 hex digits of a SHA-256. A URL that does not parse has a key of its own that
// no valid URL shares (and it is never fetched).
func RepositoryKey(url, credentials string) string {
	id := "invalid " + url
	if ep, err := parseURL(url); err == nil {
		id = endpointID(ep)
	}
	sum := sha256.Sum256([]byte(id + "\n" + credentials))
	return hex.EncodeToString(sum[:])[:16]
}

// ignoreMatcher matches repository paths against normalised ignore lines.
type ignoreMatcher struct {
	m gitignore.Matcher
}

func newIgnoreMatcher(lines []string) *ignoreMatcher {
	if len(lines) == 0 {
		return &ignoreMatcher{}
	}
	patterns := make([]gitignore.Pattern, 0, len(lines))
	for _, l := range lines {
		patterns = append(patterns, gitignore.ParsePattern(l, nil))
	}
	return &ignoreMatcher{m: gitignore.NewMatcher(patterns)}
}

// ignored reports whether the path (split into its elements) is excluded.
// Callers stop descending into an ignored directory, which gives gitignore's
// rule that files below an excluded directory cannot be re-included.
func (im *ignoreMatcher) ignored(path []string, isDir bool) bool {
	return im.m != nil && im.m.Match(path, isDir)
}

// CheckoutDir returns where the checkout of commit, fetched for the repository key with
// these ignore lines, is stored (it may not exist: never fetched, or garbage-collected).
func (f *Fetcher) CheckoutDir(key, commit string, ignore []string) string {
	return filepath.Join(f.dir, DirName(key, commit, ignore))
}
