package ui_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/operations"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
	"github.com/gitsync-dev/gitsync/internal/testutil/manifests"
	"github.com/gitsync-dev/gitsync/internal/testutil/operatortest"
	"github.com/gitsync-dev/gitsync/internal/testutil/testenv"
	"github.com/gitsync-dev/gitsync/internal/ui"
)

var env *testenv.Env

// TestMain starts one API server and the whole operator, so the UI shows real syncs.
func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	os.Exit(testenv.Run(m, &env, func() (func(), error) {
		dir, err := os.MkdirTemp("", "gitsync-ui-test-")
		if err != nil {
			return nil, err
		}
		return operatortest.Start(env, dir)
	}))
}

const password = "old-s3cret-value"

var deploymentYAML = manifests.Deployment("nginx:1.0")

// fixture is a synced Application (a Deployment, a ConfigMap and a Secret; self-heal
// off, so drift stays until the test corrects it) in a namespace of its own.
type fixture struct {
	ns   string
	sha  string
	app  *gitsyncv1.Application
	repo *gittest.Repo
}

func newFixture(t *testing.T) *fixture { t.Helper(); return newFixtureWith(t, nil) }

// newFixtureWith is newFixture with more files in the application's directory (app/).
func newFixtureWith(t *testing.T, extra map[string]string) *fixture {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	f := &fixture{ns: env.Namespace(t)}
	srv := gittest.NewServer(t, gittest.Options{})
	repo := srv.CreateRepo("app")
	f.repo = repo
	files := map[string]string{
		"app/deployment.yaml": deploymentYAML,
		"app/configmap.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  greeting: hello\n",
		"app/secret.yaml": fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\ndata:\n  password: %s\n",
			base64.StdEncoding.EncodeToString([]byte(password))),
	}
	for name, content := range extra {
		files["app/"+name] = content
	}
	f.sha = repo.Commit("main", "first", files)
	g.Expect(env.Client.Create(ctx, &gitsyncv1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "app-repo", Namespace: f.ns},
		Spec:       gitsyncv1.GitRepositorySpec{URL: srv.HTTPURL("app"), Ref: &gitsyncv1.GitRepositoryRef{Branch: "main"}},
	})).To(Succeed())
	f.app = &gitsyncv1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: f.ns},
		Spec: gitsyncv1.ApplicationSpec{
			SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "app-repo"},
			Path:      "./app", Prune: true, SelfHeal: ptr.To(false),
		},
	}
	g.Expect(env.Client.Create(ctx, f.app)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.app), f.app)).To(Succeed())
		g.Expect(f.app.Status.LastAppliedRevision).To(Equal("main@sha1:" + f.sha))
		g.Expect(apimeta.IsStatusConditionTrue(f.app.Status.Conditions, gitsyncv1.ReadyCondition)).To(BeTrue())
	}).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	return f
}

// addChildren creates what a kube-controller-manager would: a ReplicaSet owned by the
// Deployment and a Pod owned by the ReplicaSet (envtest runs no controllers).
func (f *fixture) addChildren(t *testing.T) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	dep := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "web"}, dep)).To(Succeed())
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-7d9f", Namespace: f.ns, Labels: map[string]string{"app": "web"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: dep.UID, Controller: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](1), Selector: dep.Spec.Selector, Template: dep.Spec.Template},
	}
	g.Expect(env.Client.Create(ctx, rs)).To(Succeed())
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-7d9f-abcde", Namespace: f.ns, Labels: map[string]string{"app": "web"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}}},
		Spec: dep.Spec.Template.Spec,
	}
	g.Expect(env.Client.Create(ctx, pod)).To(Succeed())
}

// setImage changes the Deployment's image as `kubectl set image` does (its own field
// manager), so the drift detector reports it.
func (f *fixture) setImage(t *testing.T, image string) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	dep := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "web"}, dep)).To(Succeed())
	base := client.MergeFrom(dep.DeepCopy())
	dep.Spec.Template.Spec.Containers[0].Image = image
	g.Expect(env.Client.Patch(ctx, dep, base, client.FieldOwner("kubectl-set"))).To(Succeed())
}

// testServer is a UI on a test server. Token is its launch token (AuthLaunchToken),
// which httpc sends it.
type testServer struct {
	*httptest.Server
	UI    *ui.Server
	Token string
}

// LoginURL logs a browser in (the cookie is set) and lands on path.
func (s *testServer) LoginURL(path string) string { return s.URL + path + "?token=" + s.Token }

// launchTokens holds the launch token of each test server, by host.
var launchTokens sync.Map

// httpc is a client that authenticates to the test servers as `gitsync ui`'s user does
// (Authorization: Bearer, the launch token), unless the request sets the header itself.
var httpc = &http.Client{Timeout: 60 * time.Second, Transport: bearerTransport{}}

type bearerTransport struct{}

func (bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if tok, ok := launchTokens.Load(r.URL.Host); ok && r.Header.Get("Authorization") == "" && tok.(string) != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+tok.(string))
	}
	return http.DefaultTransport.RoundTrip(r)
}

// startUI serves the UI for cfg's identity (as `gitsync ui` does, unless opts.Auth says
// otherwise) on a test server.
func startUI(t testing.TB, cfg *rest.Config, opts ui.Options) *testServer {
	t.Helper()
	if opts.Diff == nil {
		opts.Diff = operations.ObjectDiffsFromSource
	}
	ctx, cancel := context.WithCancel(context.Background())
	s, err := ui.New(ctx, cfg, env.Scheme, opts)
	if err != nil {
		cancel()
		t.Fatalf("creating the ui: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	if !s.WaitForCacheSync(ctx) {
		t.Fatal("ui cache did not sync")
	}
	srv := httptest.NewUnstartedServer(s)
	srv.Listener.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = ln
	srv.Start()
	launchTokens.Store(ln.Addr().String(), s.Token())
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		cancel()
		<-done
	})
	return &testServer{Server: srv, UI: s, Token: s.Token()}
}

func get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	resp, err := httpc.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading %s: %v", url, err)
	}
	return resp, string(b)
}
