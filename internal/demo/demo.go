// Package demo runs gitsync end to end on one machine: a local kube-apiserver + etcd, a
// local Git repository holding a small app, and the operator syncing it.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/localcluster"
	"github.com/gitsync-dev/gitsync/internal/operator"
	"github.com/gitsync-dev/gitsync/internal/renderworker"
)

// Namespace is where the demo's GitRepository lives.
const Namespace = "gitsync-demo"

// webhookToken signs the demo's push webhooks (the demo's own, throwaway secret).
const webhookToken = "demo-webhook-token"

// freeLocalAddr picks a free loopback port for the webhook receiver.
func freeLocalAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// Options of the demo.
type Options struct {
	// Dir holds the kubeconfig, the Git repository and the checkouts; a temporary
	// directory (removed at the end) when empty.
	Dir string
	// ExitWhenReady returns as soon as the GitRepository is Ready.
	ExitWhenReady bool
	// Out receives what the demo prints for the user.
	Out io.Writer
	// Logger, when set, makes the operator's logger, writing to <Dir>/gitsync.log.
	Logger func(io.Writer) logr.Logger
	// Binary is the gitsync binary running the demo (`gitsync demo` sets it), which the
	// printed CLI lines put on PATH.
	Binary string
	// RenderWorkers renders in worker processes of this binary (`gitsync demo` sets it;
	// a test binary cannot serve as one, so tests render in process).
	RenderWorkers bool

	// skipNameValidation lets tests run the demo more than once in a process.
	skipNameValidation bool
}

// Run runs the demo until ctx ends (or until ready, with ExitWhenReady), then cleans up.
// Ending ctx (Ctrl-C or SIGTERM in `gitsync demo`) is how the demo is meant to stop, at
// any point, even while it starts: Run then cleans up and returns nil.
func Run(ctx context.Context, o Options) (err error) {
	if o.Out == nil {
		o.Out = os.Stdout
	}
	tempDir := o.Dir == ""
	defer func() {
		if ctx.Err() == nil {
			return
		}
		// A requested stop (Ctrl-C, SIGTERM, SIGHUP), at any point: everything below is
		// cleaned up by now. The step that was running may have failed because of it (a
		// wait was cancelled, or the local API server, in the same process group as the
		// demo, got the same signal): that is not a failure of the demo.
		prefix, left, cut := "", "removed "+o.Dir, ""
		if err != nil {
			prefix, cut = "interrupted: ", fmt.Sprintf("\n  (what was running when the stop came: %v)", err)
		}
		if !tempDir {
			left = "kept " + o.Dir
		}
		err = nil
		fmt.Fprintf(o.Out, "%sstopped (the local API server and etcd are stopped and their data removed; %s)%s\n", prefix, left, cut)
	}()
	if tempDir {
		dir, err := os.MkdirTemp("", "gitsync-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		o.Dir = dir
	}
	o.Out = &lockedWriter{w: o.Out} // the notification receiver prints too
	say := func(format string, args ...any) { fmt.Fprintf(o.Out, format+"\n", args...) }
	if o.Logger != nil {
		logPath := filepath.Join(o.Dir, "gitsync.log")
		logFile, err := os.Create(logPath)
		if err != nil {
			return err
		}
		defer logFile.Close()
		ctrl.SetLogger(o.Logger(logFile))
		say("gitsync's logs: %s", logPath)
	}

	// Without KUBEBUILDER_ASSETS, hack/setup-envtest.sh says (on stderr) whether it must
	// first get the binaries, and how long that takes, before it starts.
	say("starting a local kube-apiserver + etcd...")
	cluster, err := localcluster.Start()
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := cluster.Stop(); stopErr != nil {
			err = errors.Join(err, fmt.Errorf("stopping the local API server: %w", stopErr))
		}
	}()
	kubeconfig := filepath.Join(o.Dir, "kubeconfig")
	data, err := cluster.KubeConfig()
	if err != nil {
		return err
	}
	if err := os.WriteFile(kubeconfig, data, 0o600); err != nil {
		return err
	}

	repo := filepath.Join(o.Dir, "repo")
	config, err := newConfigApp()
	if err != nil {
		return err
	}
	images, err := startImageRegistry(ctx)
	if err != nil {
		return err
	}
	for path, content := range images.imageFiles() {
		config.files[path] = content
	}
	for path, content := range fleetFiles {
		config.files[path] = content
	}
	for path, content := range remoteFiles {
		config.files[path] = content
	}
	for path, content := range mixedFiles {
		config.files[path] = content
	}
	if err := createRepo(repo, config.files); err != nil {
		return fmt.Errorf("creating the demo Git repository: %w", err)
	}

	webhookAddr, err := freeLocalAddr()
	if err != nil {
		return err
	}
	uiAddr, err := freeLocalAddr()
	if err != nil {
		return err
	}
	var renderWorkers *renderworker.Options
	if o.RenderWorkers {
		renderWorkers = &renderworker.Options{}
	}
	mgr, err := operator.New(cluster.Config, cluster.Scheme, operator.Options{
		UIBindAddress:          uiAddr,
		MetricsBindAddress:     "0",
		HealthProbeBindAddress: "0",
		StoragePath:            filepath.Join(o.Dir, "storage"),
		WebhookBindAddress:     webhookAddr,
		SkipNameValidation:     o.skipNameValidation,
		// The demo's repository is a file:// URL and its receivers are on loopback.
		AllowFileURLs: true,
		DenyEgress:    operator.NoEgressGuard,
		RenderWorkers: renderWorkers,
		// Each sync is attested, signed with a key made now (attest.go).
		AttestationKeySecret: types.NamespacedName{Namespace: Namespace, Name: attestationKeySecret},
	})
	if err != nil {
		return err
	}
	mgrCtx, stopMgr := context.WithCancel(ctx)
	mgrDone := make(chan error, 1)
	go func() { mgrDone <- mgr.Start(mgrCtx) }()
	defer func() {
		stopMgr()
		if mgrErr := <-mgrDone; mgrErr != nil {
			err = errors.Join(err, mgrErr)
		}
	}()

	c := mgr.GetClient()
	go playKubelet(mgrCtx, c, "demo-app", Namespace)
	stopNotifications, err := startNotifications(ctx, c, o.Out)
	if err != nil {
		return err
	}
	defer stopNotifications()
	chartRepo, err := startChartRepo(mgrCtx)
	if err != nil {
		return err
	}
	if err := createAttestationKey(ctx, c); err != nil {
		return err
	}
	if err := createObjects(ctx, c, repo, chartRepo); err != nil {
		return err
	}
	if err := config.create(ctx, c); err != nil {
		return err
	}
	if err := images.createImageObjects(ctx, c); err != nil {
		return err
	}
	if err := createFleet(ctx, c); err != nil {
		return err
	}
	if err := createSelfCluster(ctx, c, data); err != nil {
		return err
	}
	if err := createMixed(ctx, c); err != nil {
		return err
	}
	say("created GitRepository %s/demo (file://%s), Application %s/demo (kustomize, apps/demo/overlays/dev: a PreSync hook, then waves),"+
		" Application %s/hello (Helm chart apps/hello-chart in Git), and HelmRepository %s/charts (%s) with Application %s/hello-repo (its chart hello)",
		Namespace, repo, Namespace, Namespace, Namespace, chartRepo, Namespace)

	readyCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	app, err := waitSynced(readyCtx, c, "demo")
	if err != nil {
		return err
	}
	chartApp, err := waitSynced(readyCtx, c, "hello")
	if err != nil {
		return err
	}
	repoApp, err := waitSynced(readyCtx, c, "hello-repo")
	if err != nil {
		return err
	}
	configSynced, err := waitSynced(readyCtx, c, "config")
	if err != nil {
		return err
	}
	health := gitsyncv1.HealthStatusUnknown
	if app.Status.Health != nil {
		health = app.Status.Health.Status
	}
	say("Application %s/demo is Synced at %s, health %s, %d objects", Namespace, app.Status.LastAppliedRevision, health, len(app.Status.Inventory.Entries))
	for _, h := range app.Status.Hooks {
		say("  hook %s %s/%s: %s", h.Phase, h.Kind, h.Name, h.Result)
	}
	say("Application %s/hello is Synced: chart %s %s, %d objects", Namespace, chartApp.Status.Sync.Chart, chartApp.Status.Sync.ChartVersion, len(chartApp.Status.Inventory.Entries))
	say("Application %s/hello-repo is Synced at %s from HelmRepository charts, %d objects", Namespace, repoApp.Status.LastAppliedRevision, len(repoApp.Status.Inventory.Entries))
	say("Application %s/config is Synced: Secret db-credentials decrypted (SOPS, age key in Secret %s), ${CLUSTER_NAME} substituted, %d objects",
		Namespace, ageKeySecret, len(configSynced.Status.Inventory.Entries))
	if _, err := waitSynced(readyCtx, c, "auto"); err != nil {
		return err
	}
	if err := waitFleet(readyCtx, c, say); err != nil {
		return err
	}
	if err := waitSelfCluster(readyCtx, c, say); err != nil {
		return err
	}
	if err := waitMixed(readyCtx, c, say); err != nil {
		return err
	}
	if err := images.showTagToRollout(readyCtx, c, say); err != nil {
		return err
	}
	uiURL := "http://" + uiAddr + "/"
	token, err := uiToken(ctx, c)
	if err != nil {
		return err
	}
	if err := waitUI(ctx, uiURL, token); err != nil {
		return err
	}
	if o.RenderWorkers {
		say("renders run in %d worker processes (gitsync render-worker), each bounded by the kernel: %d MiB of memory, %s per render, no network; see them with: ps -o pid,rss,args --ppid %d",
			renderworker.DefaultWorkers, renderworker.DefaultMemory>>20, renderworker.DefaultTimeout, os.Getpid())
	}
	say("web UI (read-only, as ServiceAccount %s/%s): %s?token=%s", Namespace, uiViewer, uiURL, token)
	if o.ExitWhenReady {
		return nil
	}

	say("%s", strings.NewReplacer("{kubeconfig}", kubeconfig, "{cli}", cliHint(o.Binary), "{ns}", Namespace, "{repo}", repo, "{webhook}", webhookAddr, "{token}", webhookToken,
		"{log}", filepath.Join(o.Dir, "gitsync.log")).Replace(strings.Replace(tryHints, "{config}\n", configHints+fleetHints+previewHints+windowHints+clusterHints, 1)))
	<-ctx.Done()
	say("stopping")
	return nil
}

func createObjects(ctx context.Context, c client.Client, repo, chartRepo string) error {
	chart := &gitsyncv1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: Namespace},
		Spec: gitsyncv1.ApplicationSpec{
			SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "demo"},
			Path:      "apps/hello-chart",
			Prune:     true,
			Helm:      &gitsyncv1.HelmSpec{Values: &runtime.RawExtension{Raw: []byte(`{"replicaCount": 2}`)}},
		},
	}

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	if err := client.IgnoreAlreadyExists(c.Create(ctx, ns)); err != nil { // startNotifications may have made it
		return fmt.Errorf("creating namespace %s: %w", Namespace, err)
	}
	hookSecret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-webhook", Namespace: Namespace},
		StringData: map[string]string{"token": webhookToken},
	}
	if err := c.Create(ctx, hookSecret); err != nil {
		return fmt.Errorf("creating the webhook secret: %w", err)
	}
	gitRepo := &gitsyncv1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: Namespace},
		Spec: gitsyncv1.GitRepositorySpec{
			URL:              "file://" + repo,
			Ref:              &gitsyncv1.GitRepositoryRef{Branch: "main"},
			Interval:         &metav1.Duration{Duration: time.Minute},
			WebhookSecretRef: &gitsyncv1.LocalObjectReference{Name: hookSecret.Name},
		},
	}
	if err := c.Create(ctx, gitRepo); err != nil {
		return fmt.Errorf("creating the GitRepository: %w", err)
	}
	app := &gitsyncv1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: Namespace},
		Spec: gitsyncv1.ApplicationSpec{
			SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "demo"},
			Path:      "apps/demo/overlays/dev",
			Prune:     true,
		},
	}
	if err := c.Create(ctx, app); err != nil {
		return fmt.Errorf("creating the Application: %w", err)
	}
	if err := c.Create(ctx, chart); err != nil {
		return fmt.Errorf("creating the chart Application: %w", err)
	}
	helmRepo := &gitsyncv1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "charts", Namespace: Namespace},
		Spec:       gitsyncv1.HelmRepositorySpec{URL: chartRepo, Interval: &metav1.Duration{Duration: time.Minute}},
	}
	if err := c.Create(ctx, helmRepo); err != nil {
		return fmt.Errorf("creating the HelmRepository: %w", err)
	}
	fromRepo := &gitsyncv1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "hello-repo", Namespace: Namespace},
		Spec: gitsyncv1.ApplicationSpec{
			SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.HelmRepositoryKind, Name: "charts"},
			Prune:     true,
			Helm:      &gitsyncv1.HelmSpec{Chart: "hello", Version: "~0.3", Values: &runtime.RawExtension{Raw: []byte(`{"greeting": "hello from a chart repository"}`)}},
		},
	}
	if err := c.Create(ctx, fromRepo); err != nil {
		return fmt.Errorf("creating the HelmRepository's Application: %w", err)
	}
	return nil
}

// waitSynced waits until the demo Application name is Ready and Synced.
func waitSynced(ctx context.Context, c client.Client, name string) (*gitsyncv1.Application, error) {
	app := &gitsyncv1.Application{}
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: name}, app); err != nil {
			return false, nil
		}
		return apimeta.IsStatusConditionTrue(app.Status.Conditions, gitsyncv1.ReadyCondition) &&
			app.Status.Sync != nil && app.Status.Sync.Status == gitsyncv1.SyncStatusSynced, nil
	})
	if err != nil {
		msg := "no status yet"
		if cond := apimeta.FindStatusCondition(app.Status.Conditions, gitsyncv1.ReadyCondition); cond != nil {
			msg = cond.Reason + ": " + cond.Message
		}
		return nil, fmt.Errorf("waiting for the Application %s to be Synced (%s): %w", name, msg, err)
	}
	return app, nil
}
