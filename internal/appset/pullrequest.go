package appset

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gitsync-dev/gitsync/internal/forge"
)

// MaxBranchSlug is the length branch_slug is cut to: it leaves room in a 63-character
// DNS label for a prefix or suffix of the template's own.
const MaxBranchSlug = 50

// ShortSHALength is the length of head_short_sha.
const ShortSHALength = 8

// PullRequestParams makes one parameter set per pull request of prs: number, branch,
// branch_slug (DNS-safe), head_sha, head_short_sha, target_branch and labels. A pull
// request from a fork is left out: its head is not a branch of the repository, and its
// author need not be anyone the repository trusts. More than max sets is ErrTooMany.
func PullRequestParams(prs []forge.PullRequest, max int) ([]Params, error) {
	out := make([]Params, 0, len(prs))
	for _, pr := range prs {
		if pr.Fork {
			continue
		}
		if len(out) == max {
			return nil, fmt.Errorf("pullRequest: %w: more than %d open pull requests", ErrTooMany, max)
		}
		labels := make([]any, 0, len(pr.Labels))
		for _, l := range pr.Labels {
			labels = append(labels, l)
		}
		number := strconv.Itoa(pr.Number)
		out = append(out, Params{
			"number":         number,
			"branch":         pr.Branch,
			"branch_slug":    BranchSlug(pr.Branch, number),
			"head_sha":       pr.HeadSHA,
			"head_short_sha": shortSHA(pr.HeadSHA),
			"target_branch":  pr.TargetBranch,
			"labels":         labels,
		})
	}
	return out, nil
}

// BranchSlug makes branch a DNS-1123 label of at most MaxBranchSlug characters: lower
// case, every run of other characters one '-', no '-' at either end; a branch with no
// letter or digit gives "pr-<number>".
func BranchSlug(branch, number string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(branch) {
		if (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(c)
			dash = false
			continue
		}
		dash = true
	}
	s := b.String()
	if len(s) > MaxBranchSlug {
		s = strings.TrimRight(s[:MaxBranchSlug], "-")
	}
	if s == "" {
		return "pr-" + number
	}
	return s
}

func shortSHA(sha string) string {
	if len(sha) > ShortSHALength {
		return sha[:ShortSHALength]
	}
	return sha
}
