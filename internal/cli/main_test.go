package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/spf13/cobra"
	"go.uber.org/zap/zapcore"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/mcp"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
	"github.com/gitsync-dev/gitsync/internal/testutil/manifests"
	"github.com/gitsync-dev/gitsync/internal/testutil/operatortest"
	"github.com/gitsync-dev/gitsync/internal/testutil/testenv"
	"github.com/gitsync-dev/gitsync/internal/ui"
)

var (
	env            *testenv.Env
	kubeconfigPath string
)

// TestMain starts one API server and the whole operator (as `gitsync run` does), so the
// commands meet real controllers.
func TestMain(m *testing.M) {
	if os.Getenv(runCLIEnv) == "1" {
		// A subprocess of a test: be `gitsync ARGS...` on the real stdio (see mcp_test.go).
		root := NewRootCommand(Streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, testTools)
		os.Exit(Execute(context.Background(), root, os.Args[1:]))
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	os.Exit(testenv.Run(m, &env, func() (func(), error) {
		dir, err := os.MkdirTemp("", "gitsync-cli-test-")
		if err != nil {
			return nil, err
		}
		kubeconfig, err := env.KubeConfig()
		if err != nil {
			return nil, err
		}
		kubeconfigPath = filepath.Join(dir, "kubeconfig")
		if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
			return nil, err
		}
		return operatortest.Start(env, dir)
	}))
}

// testTools are cmd/gitsync's tools: the tests run the binary's command tree.
var testTools = []Tool{
	func(k Kube, s Streams) *cobra.Command { return ui.NewCommand(k, s.Out) },
	func(k Kube, s Streams) *cobra.Command { return mcp.NewCommand(k, s.In, s.Out, s.ErrOut, k.Version()) },
}

// runCLIEnv set to 1 makes the test binary run `gitsync` with its arguments instead of
// the tests.
const runCLIEnv = "GITSYNC_TEST_RUN_CLI"

// result is what one command run printed and its exit code.
type result struct {
	out, err string
	code     int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.err)
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader in different goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// gitsync runs `gitsync ARGS... --kubeconfig K` in process.
func gitsync(t *testing.T, args ...string) result {
	t.Helper()
	return gitsyncCtx(context.Background(), args...)
}

func gitsyncCtx(ctx context.Context, args ...string) result {
	var out, errOut syncBuffer
	root := NewRootCommand(Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, testTools)
	code := Execute(ctx, root, append(args, "--kubeconfig", kubeconfigPath))
	return result{out: out.String(), err: errOut.String(), code: code}
}

// fixture is a Git repository holding an app, its GitRepository and Application.
type fixture struct {
	ns   string
	srv  *gittest.Server
	repo *gittest.Repo
	sha  string
	app  *gitsyncv1.Application
}

const (
	configMapYAML = `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  greeting: hello
`
	secretYAML = `apiVersion: v1
kind: Secret
metadata:
  name: creds
data:
  password: %s
`
)

// appFiles are the files of the test app under app/.
func appFiles(image, password string) map[string]string {
	return map[string]string{
		"app/configmap.yaml":  configMapYAML,
		"app/deployment.yaml": manifests.Deployment(image),
		"app/secret.yaml":     fmt.Sprintf(secretYAML, base64.StdEncoding.EncodeToString([]byte(password))),
	}
}

// newFixture commits the app, creates its GitRepository and Application (prune on;
// change tweaks the spec) and waits until the first commit is applied.
func newFixture(t *testing.T, change func(*gitsyncv1.Application)) *fixture {
	t.Helper()
	g := NewWithT(t)
	f := &fixture{ns: env.Namespace(t), srv: gittest.NewServer(t, gittest.Options{})}
	f.repo = f.srv.CreateRepo("app")
	f.sha = f.repo.Commit("main", "first", appFiles("nginx:1.0", "old-s3cret-value"))
	ctx := context.Background()
	g.Expect(env.Client.Create(ctx, &gitsyncv1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "app-repo", Namespace: f.ns},
		Spec:       gitsyncv1.GitRepositorySpec{URL: f.srv.HTTPURL("app"), Ref: &gitsyncv1.GitRepositoryRef{Branch: "main"}},
	})).To(Succeed())
	f.app = &gitsyncv1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: f.ns, Labels: map[string]string{"team": "a"}},
		Spec: gitsyncv1.ApplicationSpec{
			SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "app-repo"},
			Path:      "./app",
			Prune:     true,
		},
	}
	if change != nil {
		change(f.app)
	}
	g.Expect(env.Client.Create(ctx, f.app)).To(Succeed())
	f.waitApplied(t, f.sha)
	return f
}

// waitApplied waits until the Application is Ready at commit sha.
func (f *fixture) waitApplied(t *testing.T, sha string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(f.app), f.app)).To(Succeed())
		g.Expect(f.app.Status.LastAppliedRevision).To(Equal("main@sha1:" + sha))
		g.Expect(apimeta.IsStatusConditionTrue(f.app.Status.Conditions, gitsyncv1.ReadyCondition)).To(BeTrue())
	}).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
}

// localCopy writes files into a new directory (a Git worktree of its own) and returns
// the path of its app/ directory.
func localCopy(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	NewWithT(t).Expect(os.Mkdir(filepath.Join(dir, ".git"), 0o755)).To(Succeed())
	for name, content := range files {
		p := filepath.Join(dir, name)
		NewWithT(t).Expect(os.MkdirAll(filepath.Dir(p), 0o755)).To(Succeed())
		NewWithT(t).Expect(os.WriteFile(p, []byte(content), 0o644)).To(Succeed())
	}
	return filepath.Join(dir, "app")
}

// setAutoSync sets spec.autoSync and waits until the controller has seen it.
func (f *fixture) setAutoSync(t *testing.T, on bool) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.app), f.app)).To(Succeed())
	base := client.MergeFrom(f.app.DeepCopy())
	f.app.Spec.AutoSync = &on
	g.Expect(env.Client.Patch(ctx, f.app, base)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.app), f.app)).To(Succeed())
		g.Expect(f.app.Status.ObservedGeneration).To(Equal(f.app.Generation))
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
}
