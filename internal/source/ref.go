package source

import (
	"fmt"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
)

// Ref selects what to check out. At most one of Branch, Tag and SemVer may be
// set; Commit may be combined with Branch (the commit must then be in that
// branch's history). All empty means the remote's default branch (its HEAD).
type Ref struct {
	// Branch is a branch name, with or without "refs/heads/", or another full ref
	// name (refs/pull/7/head: a pull request's head, see branchRefName).
	Branch string
	// Tag is a tag name, with or without "refs/tags/".
	Tag string
	// SemVer is a Masterminds/semver range; the highest matching tag wins.
	SemVer string
	// Commit is a full 40-hex SHA-1.
	Commit string
}

// String describes the ref for messages.
func (r Ref) String() string {
	switch {
	case r.Commit != "" && r.Branch != "":
		return fmt.Sprintf("commit %s in branch %q", r.Commit, r.Branch)
	case r.Commit != "":
		return "commit " + r.Commit
	case r.Branch != "":
		return fmt.Sprintf("branch %q", r.Branch)
	case r.Tag != "":
		return fmt.Sprintf("tag %q", r.Tag)
	case r.SemVer != "":
		return fmt.Sprintf("semver range %q", r.SemVer)
	}
	return "the default branch"
}

// normalise strips ref prefixes, lowercases the commit and checks that the
// fields form a valid combination.
func (r Ref) normalise() (Ref, error) {
	r.Branch = strings.TrimPrefix(strings.TrimSpace(r.Branch), "refs/heads/")
	r.Tag = strings.TrimPrefix(strings.TrimSpace(r.Tag), "refs/tags/")
	r.SemVer = strings.TrimSpace(r.SemVer)
	r.Commit = strings.ToLower(strings.TrimSpace(r.Commit))

	set := 0
	for _, v := range []string{r.Branch, r.Tag, r.SemVer} {
		if v != "" {
			set++
		}
	}
	if set > 1 {
		return r, fmt.Errorf("%w: set at most one of branch, tag and semver", ErrRefInvalid)
	}
	if r.Commit != "" {
		if r.Tag != "" || r.SemVer != "" {
			return r, fmt.Errorf("%w: commit combines only with branch", ErrRefInvalid)
		}
		if !isFullHash(r.Commit) {
			return r, fmt.Errorf("%w: commit %q is not a full 40-hex SHA-1", ErrRefInvalid, r.Commit)
		}
	}
	if r.SemVer != "" {
		if _, err := semver.NewConstraint(r.SemVer); err != nil {
			return r, fmt.Errorf("%w: semver range %q: %w", ErrRefInvalid, r.SemVer, err)
		}
	}
	return r, nil
}

func isFullHash(s string) bool {
	return len(s) == 40 && isLowerHex(s)
}

// remoteRefs is what a ref listing says, in the shape resolution needs.
type remoteRefs struct {
	refs   map[string]plumbing.Hash // full name -> advertised object
	peeled map[string]plumbing.Hash // annotated tag name -> commit
	head   string                   // the branch HEAD points at, if known
	headID plumbing.Hash            // HEAD's commit, zero if absent
}

func newRemoteRefs(adv *packp.AdvRefs) remoteRefs {
	rr := remoteRefs{refs: adv.References, peeled: adv.Peeled}
	if adv.Head != nil {
		rr.headID = *adv.Head
	}
	for _, v := range adv.Capabilities.Get(capability.SymRef) {
		if name, to, ok := strings.Cut(v, ":"); ok && name == "HEAD" {
			rr.head = to
		}
	}
	if rr.head == "" && !rr.headID.IsZero() {
		rr.head = guessHead(adv.References, rr.headID)
	}
	if rr.head != "" && rr.headID.IsZero() {
		rr.headID = adv.References[rr.head]
	}
	return rr
}

// guessHead finds the branch HEAD points at on servers that do not send the
// symref capability: main or master if they match, else the first matching
// branch by name.
func guessHead(refs map[string]plumbing.Hash, head plumbing.Hash) string {
	for _, name := range []string{"refs/heads/main", "refs/heads/master"} {
		if refs[name] == head {
			return name
		}
	}
	var names []string
	for name, h := range refs {
		if h == head && strings.HasPrefix(name, "refs/heads/") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return ""
	}
	return names[0]
}

// target is what a Ref resolved to on the remote.
type target struct {
	// name prefixes the revision: a branch or tag name, empty for a bare commit.
	name string
	// want is the object to fetch: a branch tip, a tag (maybe annotated).
	want plumbing.Hash
	// commit is the commit to check out. For a tag whose peeled value the
	// server did not advertise it may be the tag object; fetch corrects it.
	commit plumbing.Hash
	// depth is the history needed: 1, or 0 for all (a commit below the tip).
	depth int
}

func (t target) revision() string {
	if t.name == "" {
		return "sha1:" + t.commit.String()
	}
	return t.name + "@sha1:" + t.commit.String()
}

// resolve finds ref in the listing. ref must be normalised.
func resolve(rr remoteRefs, ref Ref) (target, error) {
	switch {
	case ref.Commit != "":
		return resolveCommit(rr, ref)
	case ref.Branch != "":
		h, ok := rr.refs[branchRefName(ref.Branch)]
		if !ok {
			return target{}, fmt.Errorf("%w: branch %q", ErrRefNotFound, ref.Branch)
		}
		return target{name: ref.Branch, want: h, commit: h, depth: 1}, nil
	case ref.Tag != "":
		return resolveTag(rr, ref.Tag)
	case ref.SemVer != "":
		tag, err := latestTag(rr.tagNames(), ref.SemVer)
		if err != nil {
			return target{}, err
		}
		return resolveTag(rr, tag)
	}
	if rr.headID.IsZero() {
		return target{}, fmt.Errorf("%w: the remote has no default branch (HEAD)", ErrRefNotFound)
	}
	name := strings.TrimPrefix(rr.head, "refs/heads/")
	if name == "" {
		name = "HEAD"
	}
	return target{name: name, want: rr.headID, commit: rr.headID, depth: 1}, nil
}

// branchRefName is the full name of a Ref's Branch: refs/heads/<branch>, or the name
// itself when it is a full ref name other than a tag (a forge's pull request head,
// refs/pull/N/head or refs/merge-requests/N/head, which a preview fetches).
func branchRefName(branch string) string {
	if strings.HasPrefix(branch, "refs/") && !strings.HasPrefix(branch, "refs/tags/") {
		return branch
	}
	return plumbing.NewBranchReferenceName(branch).String()
}

func resolveTag(rr remoteRefs, tag string) (target, error) {
	full := plumbing.NewTagReferenceName(tag).String()
	h, ok := rr.refs[full]
	if !ok {
		return target{}, fmt.Errorf("%w: tag %q", ErrRefNotFound, tag)
	}
	commit := h
	if p, ok := rr.peeled[full]; ok {
		commit = p
	}
	return target{name: tag, want: h, commit: commit, depth: 1}, nil
}

func resolveCommit(rr remoteRefs, ref Ref) (target, error) {
	commit := plumbing.NewHash(ref.Commit)
	t := target{name: ref.Branch, commit: commit}
	if ref.Branch != "" {
		h, ok := rr.refs[branchRefName(ref.Branch)]
		if !ok {
			return target{}, fmt.Errorf("%w: branch %q", ErrRefNotFound, ref.Branch)
		}
		t.want = h
	} else {
		if rr.headID.IsZero() {
			return target{}, fmt.Errorf("%w: the remote has no default branch (HEAD) to look for commit %s in",
				ErrRefNotFound, ref.Commit)
		}
		t.want = rr.headID
	}
	if t.want == commit {
		t.depth = 1
	}
	return t, nil
}

func (rr remoteRefs) tagNames() []string {
	var tags []string
	for name := range rr.refs {
		if tag, ok := strings.CutPrefix(name, "refs/tags/"); ok {
			tags = append(tags, tag)
		}
	}
	return tags
}

// latestTag returns the tag with the highest version that satisfies the
// range. Tags that are not versions (a leading "v" is allowed) are skipped;
// of two tags with equal versions ("1.0.0", "v1.0.0") the one that sorts
// first by name wins.
func latestTag(tags []string, constraint string) (string, error) {
	c, err := semver.NewConstraint(constraint)
	if err != nil {
		return "", fmt.Errorf("%w: semver range %q: %w", ErrRefInvalid, constraint, err)
	}
	var (
		best    string
		bestVer *semver.Version
	)
	for _, tag := range tags {
		v, err := semver.NewVersion(tag)
		if err != nil || !c.Check(v) {
			continue
		}
		if bestVer == nil {
			best, bestVer = tag, v
			continue
		}
		switch cmp := v.Compare(bestVer); {
		case cmp > 0, cmp == 0 && tag < best:
			best, bestVer = tag, v
		}
	}
	if bestVer == nil {
		return "", fmt.Errorf("%w: no tag matches semver range %q", ErrRefNotFound, constraint)
	}
	return best, nil
}
