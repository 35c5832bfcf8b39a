package webhook

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The push payloads of each provider, decoded into one push.

// githubPush holds the fields of GitHub's push event that the receiver reads.
// https://docs.github.com/en/webhooks/webhook-events-and-payloads#push
type githubPush struct {
	Ref        string `json:"ref"`
	Repository struct {
		CloneURL      string `json:"clone_url"`
		SSHURL        string `json:"ssh_url"`
		HTMLURL       string `json:"html_url"`
		GitURL        string `json:"git_url"`
		DefaultBranch string `json:"default_branch"`
	} `json:"repository"`
}

// parseGitHub decodes a GitHub push payload.
func parseGitHub(body []byte) (push, error) {
	var p githubPush
	if err := decode(body, &p); err != nil {
		return push{}, err
	}
	r := p.Repository
	return finish(push{
		urls:          []string{r.CloneURL, r.SSHURL, r.HTMLURL, r.GitURL},
		refs:          []string{p.Ref},
		defaultBranch: r.DefaultBranch,
	})
}

// gitlabPush holds the fields of GitLab's Push Hook and Tag Push Hook.
// https://docs.gitlab.com/user/project/integrations/webhook_events/#push-events
type gitlabPush struct {
	Ref     string `json:"ref"`
	Project struct {
		GitHTTPURL    string `json:"git_http_url"`
		GitSSHURL     string `json:"git_ssh_url"`
		WebURL        string `json:"web_url"`
		HTTPURL       string `json:"http_url"` // deprecated aliases, still sent
		SSHURL        string `json:"ssh_url"`
		DefaultBranch string `json:"default_branch"`
	} `json:"project"`
	Repository struct {
		GitHTTPURL string `json:"git_http_url"`
		GitSSHURL  string `json:"git_ssh_url"`
		Homepage   string `json:"homepage"`
		URL        string `json:"url"`
	} `json:"repository"`
}

// parseGitLab decodes a GitLab push or tag push payload.
func parseGitLab(body []byte) (push, error) {
	var p gitlabPush
	if err := decode(body, &p); err != nil {
		return push{}, err
	}
	pr, r := p.Project, p.Repository
	return finish(push{
		urls: []string{pr.GitHTTPURL, pr.GitSSHURL, pr.WebURL, pr.HTTPURL, pr.SSHURL,
			r.GitHTTPURL, r.GitSSHURL, r.Homepage, r.URL},
		refs:          []string{p.Ref},
		defaultBranch: pr.DefaultBranch,
	})
}

// giteaPush holds the fields of Gitea's (and Forgejo's) push event.
// https://docs.gitea.com/usage/webhooks
type giteaPush struct {
	Ref        string `json:"ref"`
	Repository struct {
		CloneURL      string `json:"clone_url"`
		SSHURL        string `json:"ssh_url"`
		HTMLURL       string `json:"html_url"`
		DefaultBranch string `json:"default_branch"`
	} `json:"repository"`
}

// parseGitea decodes a Gitea push payload.
func parseGitea(body []byte) (push, error) {
	var p giteaPush
	if err := decode(body, &p); err != nil {
		return push{}, err
	}
	r := p.Repository
	return finish(push{
		urls:          []string{r.CloneURL, r.SSHURL, r.HTMLURL},
		refs:          []string{p.Ref},
		defaultBranch: r.DefaultBranch,
	})
}

// bitbucketPush holds the fields of Bitbucket Server / Data Center's
// repo:refs_changed event.
// https://confluence.atlassian.com/bitbucketserver089/event-payload-1236435931.html
type bitbucketPush struct {
	Changes []struct {
		Ref struct {
			ID        string `json:"id"`
			DisplayID string `json:"displayId"`
			Type      string `json:"type"`
		} `json:"ref"`
		RefID string `json:"refId"`
	} `json:"changes"`
	Repository struct {
		Links struct {
			Clone []struct {
				Href string `json:"href"`
			} `json:"clone"`
		} `json:"links"`
	} `json:"repository"`
}

// parseBitbucket decodes a Bitbucket Server repo:refs_changed payload. Its
// payload does not name the default branch.
func parseBitbucket(body []byte) (push, error) {
	var p bitbucketPush
	if err := decode(body, &p); err != nil {
		return push{}, err
	}
	var out push
	for _, c := range p.Repository.Links.Clone {
		out.urls = append(out.urls, c.Href)
	}
	for _, c := range p.Changes {
		ref := c.Ref.ID
		if !strings.HasPrefix(ref, "refs/") {
			ref = c.RefID
		}
		if !strings.HasPrefix(ref, "refs/") && c.Ref.DisplayID != "" {
			switch c.Ref.Type {
			case "BRANCH":
				ref = "refs/heads/" + c.Ref.DisplayID
			case "TAG":
				ref = "refs/tags/" + c.Ref.DisplayID
			}
		}
		out.refs = append(out.refs, ref)
	}
	return finish(out)
}

// genericPush is the body of /hook/generic.
type genericPush struct {
	URL string `json:"url"`
	Ref string `json:"ref"`
}

// parseGeneric decodes a generic push: {"url": "...", "ref": "refs/heads/main"}.
// The ref must be a full ref name, so that a branch and a tag of one name
// cannot be confused.
func parseGeneric(body []byte) (push, error) {
	var p genericPush
	if err := decode(body, &p); err != nil {
		return push{}, err
	}
	if p.Ref != "" && !strings.HasPrefix(p.Ref, "refs/") {
		return push{}, fmt.Errorf("%w: ref %q is not a full ref name (refs/heads/… or refs/tags/…)", errPayload, p.Ref)
	}
	return finish(push{urls: []string{p.URL}, refs: []string{p.Ref}})
}

// decode unmarshals a JSON object.
func decode(body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%w: %w", errPayload, err)
	}
	return nil
}

// finish drops empty URLs and refs and fails when none is left.
func finish(p push) (push, error) {
	p.urls = nonEmpty(p.urls)
	p.refs = nonEmpty(p.refs)
	p.defaultBranch = strings.TrimSpace(p.defaultBranch)
	switch {
	case len(p.urls) == 0:
		return push{}, fmt.Errorf("%w: no repository URL", errPayload)
	case len(p.refs) == 0:
		return push{}, fmt.Errorf("%w: no ref", errPayload)
	}
	return p, nil
}

func nonEmpty(in []string) []string {
	var out []string
	for _, s := range in {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
