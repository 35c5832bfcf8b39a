package forge

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// Commit status states (GitHub's and Gitea's names; GitLab's "failed" is mapped).
const (
	StatePending = "pending"
	StateSuccess = "success"
	StateFailure = "failure"
	StateError   = "error"
)

// Status is a commit status: its state, its context (GitLab: name), a description of
// at most 140 characters (GitHub's limit; longer is cut) and a link (not sent to GitLab).
type Status struct {
	State, Context, Description, TargetURL string
}

// StatusRequest is the request that sets status s on commit sha of repo:
//   - GitHub: POST {api}/repos/{owner}/{repo}/statuses/{sha}
//     (https://docs.github.com/rest/commits/statuses#create-a-commit-status)
//   - GitLab: POST {url}/api/v4/projects/{url-encoded path}/statuses/{sha}
//     (https://docs.gitlab.com/api/commits/#set-the-pipeline-status-of-a-commit)
//   - Gitea:  POST {url}/api/v1/repos/{owner}/{repo}/statuses/{sha}
//     (https://gitea.com/api/swagger#/repository/repoCreateStatus)
func StatusRequest(ctx context.Context, t Target, repo Repo, sha string, s Status) (*http.Request, error) {
	if !IsForge(t.Type) {
		return nil, fmt.Errorf("provider type %q is not a forge (github, gitlab, gitea)", t.Type)
	}
	if t.Type == gitsyncv1.ProviderGitea && t.Address == "" {
		return nil, fmt.Errorf("gitea provider needs an address (the server's URL)")
	}
	desc := truncate(s.Description, 140)
	body := map[string]any{"state": s.State, "context": s.Context, "description": desc}
	if t.Type == gitsyncv1.ProviderGitLab {
		state := s.State
		if state == StateFailure || state == StateError {
			state = "failed"
		}
		body = map[string]any{"state": state, "name": s.Context, "description": desc}
	} else if s.TargetURL != "" {
		body["target_url"] = s.TargetURL
	}
	return t.NewRequest(ctx, http.MethodPost, t.repoPath(repo)+"/statuses/"+url.PathEscape(sha), body)
}

// SetStatus sets status s on commit sha of repo.
func (c *Client) SetStatus(ctx context.Context, repo Repo, sha string, s Status) error {
	req, err := StatusRequest(ctx, c.Target, repo, sha, s)
	if err != nil {
		return err
	}
	_, err = c.do(req, nil)
	if err != nil {
		return fmt.Errorf("setting commit status %s: %w", s.Context, err)
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
