package webhook

// The payloads are decoded by hand from the providers' documented JSON rather
// than with github.com/go-playground/webhooks/v6. That library verifies a
// delivery against the one secret a hook was built with, before it parses;
// here the secret depends on the repository the payload names (each
// GitRepository brings its own), so the library would have to be called once
// per candidate secret, or with verification off and the body parsed twice.
// The receiver needs three fields per provider (ref, repository URLs, default
// branch); small structs for them are shorter than that workaround, and keep
// the module free of another dependency.

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// errPayload marks a body the receiver cannot use (400).
var errPayload = errors.New("malformed payload")

// push is what the receiver takes from a push payload.
type push struct {
	// urls are the pushed repository's URLs as the payload spells them
	// (clone, ssh, web); the receiver matches any of them.
	urls []string
	// refs are the full names of the updated refs (refs/heads/x, refs/tags/y).
	refs []string
	// defaultBranch is the repository's default branch, "" when the payload
	// does not say.
	defaultBranch string
}

// eventKind is what a delivery's event header says it is.
type eventKind int

const (
	eventPush    eventKind = iota // parse, verify, wake
	eventPing                     // a ping or test: 200, nothing woken
	eventOther                    // any other event (issues, pull requests, …): 200, nothing woken
	eventMissing                  // no event header: 400
	eventPull                     // a pull (merge) request: verify, hand to the Previewer (pull.go)
)

// provider describes one /hook/<name> endpoint.
type provider struct {
	name string
	// event classifies the delivery from its headers.
	event func(h http.Header) eventKind
	// signature reads the delivery's signature; false when the header is absent.
	signature func(h http.Header, body []byte) (signature, bool)
	// parse decodes a push delivery.
	parse func(h http.Header, body []byte) (push, error)
	// parsePull decodes a pull request delivery (nil: the provider has none).
	parsePull func(h http.Header, body []byte) (pull, error)
}

// providers are the endpoints, by the last path element.
var providers = map[string]provider{
	"github": {
		name: "github",
		event: func(h http.Header) eventKind {
			switch h.Get("X-GitHub-Event") {
			case "":
				return eventMissing
			case "push":
				return eventPush
			case "ping":
				return eventPing
			case "pull_request":
				return eventPull
			}
			return eventOther
		},
		signature: func(h http.Header, body []byte) (signature, bool) {
			v := h.Get("X-Hub-Signature-256")
			return hmacSignature(v, true, body), v != ""
		},
		parse: func(h http.Header, body []byte) (push, error) {
			js, err := formPayload(h, body)
			if err != nil {
				return push{}, err
			}
			return parseGitHub(js)
		},
		parsePull: func(h http.Header, body []byte) (pull, error) {
			js, err := formPayload(h, body)
			if err != nil {
				return pull{}, err
			}
			return parseGitHubPull(js)
		},
	},
	"gitlab": {
		name: "gitlab",
		event: func(h http.Header) eventKind {
			switch h.Get("X-Gitlab-Event") {
			case "":
				return eventMissing
			case "Push Hook", "Tag Push Hook":
				return eventPush
			case "Merge Request Hook":
				return eventPull
			}
			// GitLab has no ping: its "Test" button sends a sample Push Hook.
			return eventOther
		},
		signature: func(h http.Header, _ []byte) (signature, bool) {
			v := h.Get("X-Gitlab-Token")
			return tokenSignature(v), v != ""
		},
		parse:     func(_ http.Header, body []byte) (push, error) { return parseGitLab(body) },
		parsePull: func(_ http.Header, body []byte) (pull, error) { return parseGitLabMerge(body) },
	},
	"gitea": {
		name: "gitea",
		event: func(h http.Header) eventKind {
			// Forgejo and Gogs send the same payload under their own names.
			e := firstHeader(h, "X-Gitea-Event", "X-Forgejo-Event", "X-Gogs-Event")
			switch e {
			case "":
				return eventMissing
			case "push": // also what Gitea's "Test Delivery" sends
				return eventPush
			case "pull_request", "pull_request_sync":
				return eventPull
			}
			return eventOther
		},
		signature: func(h http.Header, body []byte) (signature, bool) {
			if v := firstHeader(h, "X-Gitea-Signature", "X-Forgejo-Signature"); v != "" {
				return hmacSignature(v, false, body), true
			}
			// Gitea 1.22+ also sends GitHub's header.
			v := h.Get("X-Hub-Signature-256")
			return hmacSignature(v, true, body), v != ""
		},
		parse: func(h http.Header, body []byte) (push, error) {
			js, err := formPayload(h, body)
			if err != nil {
				return push{}, err
			}
			return parseGitea(js)
		},
		parsePull: func(h http.Header, body []byte) (pull, error) {
			js, err := formPayload(h, body)
			if err != nil {
				return pull{}, err
			}
			return parseGitHubPull(js)
		},
	},
	"bitbucket": {
		name: "bitbucket",
		event: func(h http.Header) eventKind {
			switch h.Get("X-Event-Key") {
			case "":
				return eventMissing
			case "repo:refs_changed":
				return eventPush
			case "diagnostics:ping":
				return eventPing
			}
			// Bitbucket Cloud's repo:push lands here too: it is not supported.
			return eventOther
		},
		signature: func(h http.Header, body []byte) (signature, bool) {
			v := h.Get("X-Hub-Signature")
			return hmacSignature(v, true, body), v != ""
		},
		parse: func(_ http.Header, body []byte) (push, error) { return parseBitbucket(body) },
	},
	"generic": {
		name:  "generic",
		event: func(http.Header) eventKind { return eventPush },
		signature: func(h http.Header, body []byte) (signature, bool) {
			v := h.Get("X-Signature")
			return hmacSignature(v, true, body), v != ""
		},
		parse: func(_ http.Header, body []byte) (push, error) { return parseGeneric(body) },
	},
}

// firstHeader returns the first non-empty value among the named headers.
func firstHeader(h http.Header, names ...string) string {
	for _, n := range names {
		if v := h.Get(n); v != "" {
			return v
		}
	}
	return ""
}

// formPayload returns the JSON of a delivery. GitHub and Gitea can be set to
// send application/x-www-form-urlencoded, with the JSON in the "payload"
// field; the signature still covers the raw body.
func formPayload(h http.Header, body []byte) ([]byte, error) {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	if mt != "application/x-www-form-urlencoded" {
		return body, nil
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, fmt.Errorf("%w: form body: %w", errPayload, err)
	}
	p := form.Get("payload")
	if p == "" {
		return nil, fmt.Errorf("%w: form body has no payload field", errPayload)
	}
	return []byte(p), nil
}

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
