package forge

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// PullRequest is an open pull request (GitLab: merge request).
type PullRequest struct {
	// Number is the pull request's number (GitLab: the merge request's iid).
	Number int
	// Branch is the head branch; HeadSHA its commit; TargetBranch the base branch.
	Branch, HeadSHA, TargetBranch string
	Labels                        []string
	// Fork is true when the head branch is in another repository.
	Fork bool
}

type ghPull struct {
	Number int `json:"number"`
	Head   struct {
		Ref  string `json:"ref"`
		SHA  string `json:"sha"`
		Repo *struct {
			FullName string `json:"full_name"`
		} `json:"repo"`
	} `json:"head"`
	Base struct {
		Ref  string `json:"ref"`
		Repo *struct {
			FullName string `json:"full_name"`
		} `json:"repo"`
	} `json:"base"`
	Labels []struct {
		Name string `json:"name"`
	} `json:"labels"`
}

type glMerge struct {
	IID             int      `json:"iid"`
	SourceBranch    string   `json:"source_branch"`
	TargetBranch    string   `json:"target_branch"`
	SHA             string   `json:"sha"`
	Labels          []string `json:"labels"`
	SourceProjectID int64    `json:"source_project_id"`
	TargetProjectID int64    `json:"target_project_id"`
}

// ListPullRequests lists the open pull requests of repo that carry every one of labels
// (none: all), at most MaxPages pages of them. The ApplicationSet pullRequest generator
// and the preview use it.
func (c *Client) ListPullRequests(ctx context.Context, repo Repo, labels []string) ([]PullRequest, error) {
	var all []PullRequest
	for p := 1; p <= MaxPages; p++ {
		path := c.Target.repoPath(repo) + "/pulls?state=open&" + c.Target.pageQuery(p)
		if c.Target.Type == gitsyncv1.ProviderGitLab {
			path = c.Target.repoPath(repo) + "/merge_requests?state=opened&" + c.Target.pageQuery(p)
			if len(labels) > 0 {
				path += "&labels=" + url.QueryEscape(strings.Join(labels, ","))
			}
		}
		req, err := c.Target.NewRequest(ctx, http.MethodGet, path, nil)
		if err != nil {
			return nil, err
		}
		n, err := c.listPage(req, &all)
		if err != nil {
			return nil, fmt.Errorf("listing pull requests: %w", err)
		}
		if n < c.Target.pageSize() {
			break
		}
	}
	out := all[:0]
	for _, pr := range all {
		if hasAll(pr.Labels, labels) {
			out = append(out, pr)
		}
	}
	return out, nil
}

// listPage decodes one page into all and returns its length.
func (c *Client) listPage(req *http.Request, all *[]PullRequest) (int, error) {
	if c.Target.Type == gitsyncv1.ProviderGitLab {
		var page []glMerge
		if _, err := c.do(req, &page); err != nil {
			return 0, err
		}
		for _, m := range page {
			*all = append(*all, PullRequest{Number: m.IID, Branch: m.SourceBranch, HeadSHA: m.SHA, TargetBranch: m.TargetBranch,
				Labels: m.Labels, Fork: m.SourceProjectID != 0 && m.SourceProjectID != m.TargetProjectID})
		}
		return len(page), nil
	}
	var page []ghPull
	if _, err := c.do(req, &page); err != nil {
		return 0, err
	}
	for _, p := range page {
		pr := PullRequest{Number: p.Number, Branch: p.Head.Ref, HeadSHA: p.Head.SHA, TargetBranch: p.Base.Ref}
		for _, l := range p.Labels {
			pr.Labels = append(pr.Labels, l.Name)
		}
		pr.Fork = p.Head.Repo == nil || (p.Base.Repo != nil && !strings.EqualFold(p.Head.Repo.FullName, p.Base.Repo.FullName))
		*all = append(*all, pr)
	}
	return len(page), nil
}

func hasAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}
