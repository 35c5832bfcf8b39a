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
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
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
