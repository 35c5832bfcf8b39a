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

// DirName is the name of the checkout directory of commit with the ignore
// lines applied: the commit itself when nothing is ignored, else the commit
// and the first 12 hex digits of the SHA-256 of the normalised ignore lines.
// Equal content gets equal names, so repositories that share a commit share
// its checkout.
func DirName(commit string, ignore []string) string {
	commit = strings.ToLower(commit)
	lines := normaliseIgnore(ignore)
	if len(lines) == 0 {
		return commit
	}
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return commit + "-" + hex.EncodeToString(sum[:])[:12]
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

// CheckoutDir returns where the checkout of commit with these ignore lines is stored (it may
// not exist: never fetched, or garbage-collected).
func (f *Fetcher) CheckoutDir(commit string, ignore []string) string {
	return filepath.Join(f.dir, DirName(commit, ignore))
}
