package webhook

import (
	"bytes"
	"context"
	"net/http"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
)

// previews records what the receiver hands to the Previewer.
type previews struct {
	mu  sync.Mutex
	got []PullRequest
}

func (p *previews) Preview(_ context.Context, pr PullRequest) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = append(p.got, pr)
}

func (p *previews) all() []PullRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]PullRequest(nil), p.got...)
}

type pullCase struct {
	provider, file    string
	headers           http.Header
	sign              func(http.Header, string, []byte)
	specURL           string
	number            int
	head, sha, action string
	closedFrom        [2]string // the payload's open action and its closing one
}

var pullCases = []pullCase{
	{provider: "github", file: "github-pull-request.json", headers: http.Header{"X-Github-Event": {"pull_request"}},
		sign: providerCases[0].sign, specURL: providerCases[0].specURL, number: 42, head: "raise-replicas",
		sha: "6dcb09b5b57875f334f61aebed695e2e4193db5e", closedFrom: [2]string{`"action": "synchronize"`, `"action": "closed"`}},
	{provider: "gitlab", file: "gitlab-merge-request.json", headers: http.Header{"X-Gitlab-Event": {"Merge Request Hook"}},
		sign: providerCases[1].sign, specURL: providerCases[1].specURL, number: 42, head: "raise-replicas",
		sha: "da1560886d4f094c3e6c9ef40349f7d38b5d27d7", closedFrom: [2]string{`"action": "update"`, `"action": "merge"`}},
	{provider: "gitea", file: "gitea-pull-request.json", headers: http.Header{"X-Gitea-Event": {"pull_request"}},
		sign: providerCases[2].sign, specURL: providerCases[2].specURL, number: 42, head: "raise-replicas",
		sha: "bffeb74224043ba2feb48d137756c8a9331c449a", closedFrom: [2]string{`"action": "synchronized"`, `"action": "closed"`}},
}

// A signed pull request event of each forge is handed to the Previewer for the
// repositories it verified for (never woken); unsigned or wrongly signed: 401 and
// nothing; too big: 413; closing: a closed request; a replay: nothing.
func TestPullRequestEvents(t *testing.T) {
	for _, pc := range pullCases {
		t.Run(pc.provider, func(t *testing.T) {
			g := NewWithT(t)
			cluster := &fakeCluster{repos: tenants(pc.specURL)}
			pv := &previews{}
			base := start(t, cluster, Options{Previewer: pv, MaxBodyBytes: 16 << 10})
			body := readTestdata(t, pc.file)

			g.Expect(post(t, base, pc.provider, pc.headers, body, pc.sign, "").code).To(Equal(http.StatusUnauthorized))
			g.Expect(post(t, base, pc.provider, pc.headers, body, pc.sign, "wrong").code).To(Equal(http.StatusUnauthorized))
			g.Expect(pv.all()).To(BeEmpty())
			big := append(bytes.Clone(body), bytes.Repeat([]byte(" "), 20<<10)...)
			g.Expect(post(t, base, pc.provider, pc.headers, big, pc.sign, "secret-a").code).To(Equal(http.StatusRequestEntityTooLarge))

			got := post(t, base, pc.provider, pc.headers, body, pc.sign, "secret-a")
			g.Expect(got.code).To(Equal(http.StatusAccepted))
			// tenant-a's two repositories of that URL (app, app-dev), not tenant-b's.
			g.Expect(got.woken).To(Equal(2))
			g.Expect(cluster.Woken()).To(BeEmpty())
			prs := pv.all()
			g.Expect(prs).To(HaveLen(2))
			for _, pr := range prs {
				g.Expect(pr.Namespace).To(Equal("tenant-a"))
				g.Expect(pr).To(Equal(PullRequest{Namespace: "tenant-a", Name: pr.Name, Action: PullOpened, Provider: pc.provider,
					Number: pc.number, HeadBranch: pc.head, HeadSHA: pc.sha, BaseBranch: "main"}))
			}

			// The same body again is a replay.
			got = post(t, base, pc.provider, pc.headers, body, pc.sign, "secret-a")
			g.Expect(got.code).To(Equal(http.StatusAccepted))
			g.Expect(got.woken).To(Equal(0))

			closed := bytes.Replace(body, []byte(pc.closedFrom[0]), []byte(pc.closedFrom[1]), 1)
			g.Expect(closed).NotTo(Equal(body))
			got = post(t, base, pc.provider, pc.headers, closed, pc.sign, "secret-b")
			g.Expect(got.code).To(Equal(http.StatusAccepted))
			g.Expect(got.woken).To(Equal(1))
			last := pv.all()[2]
			g.Expect(last.Namespace).To(Equal("tenant-b"))
			g.Expect(last.Action).To(Equal(PullClosed))
		})
	}
}

// Without a Previewer, pull request events stay "other events" (200, no signature needed).
func TestPullRequestWithoutPreviewer(t *testing.T) {
	g := NewWithT(t)
	pc := pullCases[0]
	cluster := &fakeCluster{repos: tenants(pc.specURL)}
	base := start(t, cluster, Options{})
	got := post(t, base, pc.provider, pc.headers, readTestdata(t, pc.file), pc.sign, "")
	g.Expect(got.code).To(Equal(http.StatusOK))
	g.Expect(got.woken).To(Equal(0))
}

// Forks and the actions that ask nothing (edited, labeled; a GitLab update without
// commits) are told apart in the payloads.
func TestPullPayloads(t *testing.T) {
	g := NewWithT(t)
	gh := readTestdata(t, "github-pull-request.json")
	fork := bytes.Replace(gh, []byte(`"full_name": "acme/platform-config",
        "fork": false,
        "html_url": "https://github.com/acme/platform-config",
        "clone_url": "https://github.com/acme/platform-config.git",
        "ssh_url": "git@github.com:acme/platform-config.git",
        "default_branch": "main"
      }
    },
    "base"`), []byte(`"full_name": "mallory/platform-config",
        "fork": true
      }
    },
    "base"`), 1)
	g.Expect(fork).NotTo(Equal(gh))
	p, err := parseGitHubPull(fork)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.fork).To(BeTrue())
	p, err = parseGitHubPull(gh)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.fork).To(BeFalse())

	p, err = parseGitHubPull(bytes.Replace(gh, []byte(`"synchronize"`), []byte(`"labeled"`), 1))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.action).To(BeEmpty())

	gl := readTestdata(t, "gitlab-merge-request.json")
	p, err = parseGitLabMerge(bytes.Replace(gl, []byte(`"oldrev": "b83d6e391c22777fca1ed3012fce84f633d7fed0"`), []byte(`"x": 1`), 1))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.action).To(BeEmpty())
	p, err = parseGitLabMerge(bytes.Replace(gl, []byte(`"source_project_id": 1`), []byte(`"source_project_id": 5`), 1))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.fork).To(BeTrue())

	_, err = parseGitHubPull([]byte(`{"action":"opened","repository":{}}`))
	g.Expect(err).To(HaveOccurred())
}
