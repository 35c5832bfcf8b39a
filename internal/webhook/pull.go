package webhook

import (
	"context"
	"crypto/sha256"
	"net/http"
	"strings"

	"github.com/go-logr/logr"
)

// PullAction is what a pull (merge) request event asks of a preview.
type PullAction string

const (
	// PullOpened: opened, reopened, or new commits pushed (GitHub synchronize, Gitea
	// synchronized, GitLab open/reopen/update): preview the head.
	PullOpened PullAction = "opened"
	// PullClosed: closed or merged: stop any preview of it.
	PullClosed PullAction = "closed"
)

// PullRequest is a pull (merge) request event for one GitRepository the delivery
// verified for.
type PullRequest struct {
	// Namespace and Name identify the GitRepository.
	Namespace, Name string
	Action          PullAction
	// Provider is the endpoint the delivery came to: github, gitlab or gitea.
	Provider string
	// Number is the pull request's number (GitLab: the merge request's iid).
	Number int
	// HeadBranch and HeadSHA are the head's branch and commit; BaseBranch the target.
	HeadBranch, HeadSHA, BaseBranch string
	// Fork is true when the head is in another repository than the base.
	Fork bool
}

// Previewer runs previews of pull requests; the operator wires internal/preview's runner.
// Preview must return at once (the work runs in the background).
type Previewer interface {
	Preview(ctx context.Context, pr PullRequest)
}

// pull is what the receiver takes from a pull request payload.
type pull struct {
	// urls are the base repository's URLs.
	urls                            []string
	action                          PullAction // "" for an action that asks nothing
	number                          int
	headBranch, headSHA, baseBranch string
	fork                            bool
}

// handlePull runs steps 4 to 7 of the package comment for a pull request event: the
// same signature rules as a push; the verified candidates are handed to the Previewer
// (it decides whether the repository has previews and the target branch is one of
// them), and the answer counts them as woken.
func (h *handler) handlePull(r *http.Request, p provider, body []byte, log logr.Logger) (int, int) {
	sig, present := p.signature(r.Header, body)
	if !present {
		log.V(1).Info("delivery rejected", "code", http.StatusUnauthorized, "reason", "no signature")
		return http.StatusUnauthorized, 0
	}
	ev, err := p.parsePull(r.Header, body)
	if err != nil {
		log.V(1).Info("delivery rejected", "code", http.StatusBadRequest, "reason", "malformed payload")
		return http.StatusBadRequest, 0
	}
	repos, err := h.cluster.Repositories(r.Context())
	if err != nil {
		log.Error(err, "listing GitRepositories")
		return http.StatusInternalServerError, 0
	}
	cands, err := h.withSecrets(r.Context(), candidates(repos, ev.urls))
	if err != nil {
		log.Error(err, "reading webhook secrets")
		return http.StatusInternalServerError, 0
	}
	verified, ok := verify(cands, sig, h.shared)
	if !ok {
		log.V(1).Info("delivery rejected", "code", http.StatusUnauthorized, "reason", "signature verifies for no repository the payload names")
		return http.StatusUnauthorized, 0
	}
	if ev.action == "" {
		log.V(1).Info("pull request event ignored: its action asks for no preview")
		return http.StatusAccepted, 0
	}
	digest := sha256.Sum256(body)
	handed := 0
	for _, repo := range verified {
		if h.replays.replayed(repo.Namespace, repo.Name, digest) {
			log.Info("replayed delivery ignored", "namespace", repo.Namespace, "name", repo.Name)
			continue
		}
		h.previewer.Preview(context.WithoutCancel(r.Context()), PullRequest{Namespace: repo.Namespace, Name: repo.Name,
			Action: ev.action, Provider: p.name, Number: ev.number, HeadBranch: ev.headBranch, HeadSHA: ev.headSHA,
			BaseBranch: ev.baseBranch, Fork: ev.fork})
		log.Info("pull request handed to the preview", "namespace", repo.Namespace, "name", repo.Name, "number", ev.number, "action", string(ev.action))
		handed++
	}
	return http.StatusAccepted, handed
}

// verify returns the candidates a delivery verified for (their own secret, or the
// shared one), each once, and whether it verified for any (or the shared secret).
func verify(cands []Repository, sig signature, shared []byte) ([]Repository, bool) {
	sharedOK := shared != nil && sig.verify(shared)
	if len(cands) == 0 {
		_ = sig.verify(decoyKey)
	}
	verified := make(map[string]bool, len(cands))
	authenticated := sharedOK
	var out []Repository
	seen := make(map[[2]string]bool, len(cands))
	for _, c := range cands {
		ok := sharedOK
		if key := secretKey(c.Secret); key != nil {
			v, done := verified[string(key)]
			if !done {
				v = sig.verify(key)
				verified[string(key)] = v
			}
			ok = ok || v
		}
		authenticated = authenticated || ok
		id := [2]string{c.Namespace, c.Name}
		if ok && !seen[id] {
			seen[id] = true
			out = append(out, c)
		}
	}
	return out, authenticated
}

// githubPull holds the fields of GitHub's pull_request event (Gitea's and Forgejo's are
// the same shape; their "synchronized" is GitHub's "synchronize").
// https://docs.github.com/en/webhooks/webhook-events-and-payloads#pull_request
type githubPull struct {
	Action      string `json:"action"`
	Number      int    `json:"number"`
	PullRequest struct {
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
	} `json:"pull_request"`
	Repository struct {
		CloneURL string `json:"clone_url"`
		SSHURL   string `json:"ssh_url"`
		HTMLURL  string `json:"html_url"`
		GitURL   string `json:"git_url"`
	} `json:"repository"`
}

// parseGitHubPull decodes a GitHub or Gitea pull_request payload.
func parseGitHubPull(body []byte) (pull, error) {
	var p githubPull
	if err := decode(body, &p); err != nil {
		return pull{}, err
	}
	pr := p.PullRequest
	out := pull{
		urls:   nonEmpty([]string{p.Repository.CloneURL, p.Repository.SSHURL, p.Repository.HTMLURL, p.Repository.GitURL}),
		number: pr.Number, headBranch: pr.Head.Ref, headSHA: pr.Head.SHA, baseBranch: pr.Base.Ref,
	}
	if out.number == 0 {
		out.number = p.Number
	}
	out.fork = pr.Head.Repo == nil || (pr.Base.Repo != nil && !strings.EqualFold(pr.Head.Repo.FullName, pr.Base.Repo.FullName))
	switch p.Action {
	case "opened", "reopened", "synchronize", "synchronized":
		out.action = PullOpened
	case "closed":
		out.action = PullClosed
	}
	return finishPull(out)
}

// gitlabMerge holds the fields of GitLab's Merge Request Hook.
// https://docs.gitlab.com/user/project/integrations/webhook_events/#merge-request-events
type gitlabMerge struct {
	ObjectKind string `json:"object_kind"`
	Project    struct {
		GitHTTPURL string `json:"git_http_url"`
		GitSSHURL  string `json:"git_ssh_url"`
		WebURL     string `json:"web_url"`
		HTTPURL    string `json:"http_url"`
		SSHURL     string `json:"ssh_url"`
	} `json:"project"`
	ObjectAttributes struct {
		IID             int    `json:"iid"`
		Action          string `json:"action"`
		SourceBranch    string `json:"source_branch"`
		TargetBranch    string `json:"target_branch"`
		SourceProjectID int64  `json:"source_project_id"`
		TargetProjectID int64  `json:"target_project_id"`
		OldRev          string `json:"oldrev"`
		LastCommit      struct {
			ID string `json:"id"`
		} `json:"last_commit"`
	} `json:"object_attributes"`
}

// parseGitLabMerge decodes a GitLab Merge Request Hook. An "update" asks for a preview
// only when it brought commits (oldrev set), not for a title or label edit.
func parseGitLabMerge(body []byte) (pull, error) {
	var p gitlabMerge
	if err := decode(body, &p); err != nil {
		return pull{}, err
	}
	a, pr := p.ObjectAttributes, p.Project
	out := pull{
		urls:   nonEmpty([]string{pr.GitHTTPURL, pr.GitSSHURL, pr.WebURL, pr.HTTPURL, pr.SSHURL}),
		number: a.IID, headBranch: a.SourceBranch, headSHA: a.LastCommit.ID, baseBranch: a.TargetBranch,
		fork: a.SourceProjectID != 0 && a.SourceProjectID != a.TargetProjectID,
	}
	switch {
	case a.Action == "open" || a.Action == "reopen" || (a.Action == "update" && a.OldRev != ""):
		out.action = PullOpened
	case a.Action == "close" || a.Action == "merge":
		out.action = PullClosed
	}
	return finishPull(out)
}

func finishPull(p pull) (pull, error) {
	if len(p.urls) == 0 || p.number <= 0 {
		return pull{}, errPayload
	}
	if p.action == PullOpened && (p.headSHA == "" || p.baseBranch == "") {
		return pull{}, errPayload
	}
	return p, nil
}
