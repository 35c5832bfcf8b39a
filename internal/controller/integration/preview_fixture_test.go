package integration

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/controller/sources"
	"github.com/gitsync-dev/gitsync/internal/impersonate"
	"github.com/gitsync-dev/gitsync/internal/preview"
	"github.com/gitsync-dev/gitsync/internal/testutil/apicount"
	"github.com/gitsync-dev/gitsync/internal/testutil/forgetest"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
	"github.com/gitsync-dev/gitsync/internal/webhook"
)

// previewFixture is a Git repository acme/app with a GitRepository that has
// spec.preview, a Provider of type github served by the forge emulator, the runner and
// the webhook receiver handing it pull request events (as the operator wires them).
type previewFixture struct {
	t        testing.TB
	ns       string
	srv      *gittest.Server
	repo     *gittest.Repo
	forge    *forgetest.Server
	runner   *preview.Runner
	receiver string
	token    []byte
	cloneURL string
	// kind is the forge: forgetest.GitHub, GitLab or Gitea.
	kind string
	// api counts the runner's requests to the API server.
	api *apicount.Counter
}

// envAccess is what impersonate.New needs of a manager, from the test's API server.
type envAccess struct{ hc *http.Client }

func (envAccess) GetScheme() *runtime.Scheme     { return env.Scheme }
func (envAccess) GetRESTMapper() meta.RESTMapper { return env.Client.RESTMapper() }
func (a envAccess) GetHTTPClient() *http.Client  { return a.hc }
func (p previewAdapter) Preview(_ context.Context, pr webhook.PullRequest) {
	p.r.Preview(toRequest(pr))
}

// previewAdapter is internal/operator's previewer, for the test's receiver.
type previewAdapter struct{ r *preview.Runner }

func toRequest(pr webhook.PullRequest) preview.Request {
	return preview.Request{Namespace: pr.Namespace, Name: pr.Name, Number: pr.Number, HeadBranch: pr.HeadBranch,
		HeadSHA: pr.HeadSHA, BaseBranch: pr.BaseBranch, Fork: pr.Fork, Closed: pr.Action == webhook.PullClosed}
}

func newPreviewFixture(t testing.TB, files map[string]string) (*previewFixture, string) {
	t.Helper()
	return newPreviewFixtureFor(t, forgetest.GitHub, files)
}

// newPreviewFixtureFor is newPreviewFixture with a forge of kind.
func newPreviewFixtureFor(t testing.TB, kind string, files map[string]string) (*previewFixture, string) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	srv := gittest.NewServer(t, gittest.Options{})
	f := &previewFixture{t: t, ns: ns, srv: srv, repo: srv.CreateRepo("acme/app"), kind: kind, api: apicount.New()}
	sha := f.repo.Commit("main", "initial", files)
	f.cloneURL = srv.HTTPURL("acme/app")
	f.forge = forgetest.New(t, kind, "forge-token")
	f.token = []byte("hook-token-" + ns)
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: "hook", Namespace: ns}, Data: map[string][]byte{"token": f.token}},
		{ObjectMeta: metav1.ObjectMeta{Name: "forge", Namespace: ns}, Data: map[string][]byte{"token": []byte("forge-token")}},
	} {
		g.Expect(env.Client.Create(ctx, s)).To(Succeed())
	}
	g.Expect(env.Client.Create(ctx, &gitsyncv1.Provider{ObjectMeta: metav1.ObjectMeta{Name: "forge", Namespace: ns},
		Spec: gitsyncv1.ProviderSpec{Type: kind, Address: f.forge.URL,
			SecretRef: &gitsyncv1.LocalObjectReference{Name: "forge"}}})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &gitsyncv1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: "repo", Namespace: ns},
		Spec: gitsyncv1.GitRepositorySpec{URL: f.cloneURL, Ref: &gitsyncv1.GitRepositoryRef{Branch: "main"},
			Interval:         &metav1.Duration{Duration: time.Hour},
			WebhookSecretRef: &gitsyncv1.LocalObjectReference{Name: "hook"},
			Preview: &gitsyncv1.GitRepositoryPreview{ProviderRef: gitsyncv1.LocalObjectReference{Name: "forge"},
				TargetBranches: []string{"main"}}}})).To(Succeed())

	// The runner's requests to the API server are counted (the benchmark reports them).
	cfg := rest.CopyConfig(env.Config)
	f.api.Wrap(cfg)
	hc, err := rest.HTTPClientFor(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	counted, err := client.New(cfg, client.Options{Scheme: env.Scheme, Mapper: env.Client.RESTMapper(), HTTPClient: hc})
	g.Expect(err).NotTo(HaveOccurred())
	applyFor, err := impersonate.New(cfg, envAccess{hc})
	g.Expect(err).NotTo(HaveOccurred())
	f.runner = &preview.Runner{Client: counted, Secrets: counted, ApplyFor: applyFor, TempDir: t.TempDir()}
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = f.runner.Start(runCtx) }()
	t.Cleanup(func() { cancel(); <-done })
	g.Eventually(f.runner.Running).Should(BeTrue())
	receiver := httptest.NewServer(webhook.NewHandler(&sources.WebhookCluster{Client: env.Client, APIReader: env.Client},
		webhook.Options{Previewer: previewAdapter{f.runner}}))
	t.Cleanup(receiver.Close)
	f.receiver = receiver.URL
	return f, sha
}

// app creates an Application of the fixture's repository.
func (f *previewFixture) app(name string, mutate func(*gitsyncv1.Application)) {
	f.t.Helper()
	app := &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns},
		Spec: gitsyncv1.ApplicationSpec{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "repo"}}}
	mutate(app)
	NewWithT(f.t).Expect(env.Client.Create(context.Background(), app)).To(Succeed())
}

// waitApplied waits until the Application is Ready at main@sha1:<sha>.
func (f *previewFixture) waitApplied(name, sha string) {
	f.t.Helper()
	NewWithT(f.t).Eventually(func(g Gomega) {
		app := &gitsyncv1.Application{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: name}, app)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(app.Status.Conditions, gitsyncv1.ReadyCondition)).To(BeTrue())
		g.Expect(app.Status.LastAppliedRevision).To(Equal("main@sha1:" + sha))
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
}

// pullPayload is the forge's pull request event for this repository (GitHub's and
// Gitea's pull_request, GitLab's Merge Request Hook), with the fields the forges document
// around the ones gitsync reads; action is GitHub's (opened, synchronize, closed).
func (f *previewFixture) pullPayload(action string, number int, branch, sha, headRepo string) []byte {
	if f.kind == forgetest.GitLab {
		glAction, oldrev, source := map[string]string{"opened": "open", "synchronize": "update", "closed": "close"}[action], "", 1
		if action == "synchronize" {
			oldrev = `, "oldrev": "0000000000000000000000000000000000000001"`
		}
		if headRepo != "acme/app" {
			source = 2
		}
		return []byte(fmt.Sprintf(`{
  "object_kind": "merge_request", "event_type": "merge_request", "user": {"username": "dev"},
  "project": {"id": 1, "path_with_namespace": "acme/app", "web_url": %q, "git_http_url": %q, "default_branch": "main"},
  "object_attributes": {"iid": %d, "action": %q, "state": "opened", "source_branch": %q, "target_branch": "main",
    "source_project_id": %d, "target_project_id": 1, "last_commit": {"id": %q}%s},
  "labels": [], "changes": {}
}`, f.cloneURL, f.cloneURL, number, glAction, branch, source, sha, oldrev))
	}
	if f.kind == forgetest.Gitea && action == "synchronize" {
		action = "synchronized"
	}
	return []byte(fmt.Sprintf(`{
  "action": %q, "number": %d,
  "pull_request": {"number": %d, "state": "open", "title": "change", "user": {"login": "dev"}, "labels": [],
    "head": {"label": "acme:%s", "ref": %q, "sha": %q, "repo": {"full_name": %q, "clone_url": %q}},
    "base": {"label": "acme:main", "ref": "main", "sha": "0000000000000000000000000000000000000000",
      "repo": {"full_name": "acme/app", "clone_url": %q}}},
  "repository": {"name": "app", "full_name": "acme/app", "clone_url": %q, "default_branch": "main"},
  "sender": {"login": "dev"}
}`, action, number, number, branch, branch, sha, headRepo, f.cloneURL, f.cloneURL, f.cloneURL))
}

// openPull delivers a signed pull request event and waits for the preview it started
// to finish.
func (f *previewFixture) openPull(action string, number int, branch, sha, headRepo string) {
	f.t.Helper()
	f.deliver(action, number, branch, sha, headRepo)
	f.runner.Wait()
}

// deliver posts a signed pull request event, signed as the forge signs it.
func (f *previewFixture) deliver(action string, number int, branch, sha, headRepo string) {
	f.t.Helper()
	g := NewWithT(f.t)
	body := f.pullPayload(action, number, branch, sha, headRepo)
	req, err := http.NewRequest(http.MethodPost, f.receiver+"/hook/"+f.kind, bytes.NewReader(body))
	g.Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/json")
	switch f.kind {
	case forgetest.GitLab:
		req.Header.Set("X-Gitlab-Event", "Merge Request Hook")
		req.Header.Set("X-Gitlab-Token", string(f.token))
	case forgetest.Gitea:
		req.Header.Set("X-Gitea-Event", "pull_request")
		req.Header.Set("X-Gitea-Signature", strings.TrimPrefix(sign(f.token, body), "sha256="))
	default:
		req.Header.Set("X-GitHub-Event", "pull_request")
		req.Header.Set("X-Hub-Signature-256", sign(f.token, body))
	}
	resp, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusAccepted))
}

// statusOf is the last gitsync/preview status of sha.
func (f *previewFixture) statusOf(sha string) *forgetest.Status {
	var last *forgetest.Status
	for _, s := range f.forge.Statuses() {
		if s.SHA == sha && s.Context == preview.StatusContext {
			last = &s
		}
	}
	return last
}

// versions are the resourceVersions of the namespace's ConfigMaps, Secrets and
// Deployments, by kind and name.
func (f *previewFixture) versions(g Gomega) map[string]string {
	out := map[string]string{}
	for kind, list := range map[string]client.ObjectList{"ConfigMap": &corev1.ConfigMapList{}, "Secret": &corev1.SecretList{}} {
		g.Expect(env.Client.List(context.Background(), list, client.InNamespace(f.ns))).To(Succeed())
		items, err := meta.ExtractList(list)
		g.Expect(err).NotTo(HaveOccurred())
		for _, it := range items {
			o := it.(client.Object)
			out[kind+"/"+o.GetName()] = o.GetResourceVersion()
		}
	}
	return out
}
