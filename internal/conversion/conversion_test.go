package conversion

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1alpha1"
	"github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, &env, nil))
}

// started is a manager running the conversion webhook on 127.0.0.1.
type started struct {
	webhook *Webhook
	port    int
	stop    func()
}

// start points the CRDs at a conversion webhook on 127.0.0.1 by URL (as the operator's
// Service is reached in a cluster) and runs a manager whose webhook server serves it with
// the certificate of opts (its Secret in namespace ns, issued for "localhost"). The CRDs
// go back to no conversion when the test ends.
func start(t *testing.T, ns string, opts Options) *started {
	t.Helper()
	g := NewWithT(t)
	port := freePort(t)
	t.Cleanup(func() { setConversion(t, nil) })

	opts.Namespace, opts.DNSName, opts.CertDir = ns, "localhost", t.TempDir()
	opts.ControllerName = "conversion-cert-" + ns
	w := New(opts)
	mgr, err := manager.New(env.Config, manager.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: "127.0.0.1", Port: port, TLSOpts: []func(*tls.Config){w.TLSOpt},
		}),
	})
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	url := fmt.Sprintf("https://localhost:%d%s", port, Path)
	setConversion(t, &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: &url},
			ConversionReviewVersions: []string{"v1"},
		},
	})
	g.Expect(w.Setup(ctx, mgr)).To(BeTrue())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stop := func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	}
	t.Cleanup(func() {
		select {
		case <-ctx.Done():
		default:
			stop()
		}
	})
	select {
	case <-w.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("the conversion webhook did not become ready")
	}
	// The API server follows the CRDs' new clientConfig and CA shortly after.
	g.Eventually(func() error {
		return env.Client.List(context.Background(), &gitsyncv1.ApplicationList{}, client.InNamespace(ns))
	}).WithTimeout(20 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	return &started{webhook: w, port: port, stop: stop}
}

// freePort returns a TCP port of 127.0.0.1 that nothing listens on.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// setConversion sets spec.conversion of the converted CRDs (nil: no conversion),
// keeping the caBundle the rotator injected when the clientConfig stays.
func setConversion(t *testing.T, c *apiextensionsv1.CustomResourceConversion) {
	t.Helper()
	for _, name := range CRDs {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, crd); err != nil {
				return err
			}
			if c == nil {
				crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
			} else {
				crd.Spec.Conversion = c.DeepCopy()
			}
			return env.Client.Update(context.Background(), crd)
		})
		if err != nil {
			t.Fatalf("setting the conversion of %s: %v", name, err)
		}
	}
}

// specAndStatus returns obj's spec and status as JSON, apiVersion aside.
func specAndStatus(t *testing.T, obj runtime.Object) string {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(map[string]any{"spec": m["spec"], "status": m["status"]})
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func application(ns, name string) *gitsyncv1.Application {
	selfHeal := false
	return &gitsyncv1.Application{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{"team": "a"}},
		Spec: gitsyncv1.ApplicationSpec{
			SourceRef:         gitsyncv1.SourceReference{Kind: gitsyncv1.HelmRepositoryKind, Name: "charts"},
			TargetNamespace:   "apps",
			Prune:             true,
			SelfHeal:          &selfHeal,
			IgnoreDifferences: []gitsyncv1.IgnoreDifference{{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}}},
			DependsOn:         []gitsyncv1.DependencyReference{{Name: "base"}},
			Helm: &gitsyncv1.HelmSpec{Chart: "podinfo", Version: ">=6.0.0 <7.0.0",
				Values:     &runtime.RawExtension{Raw: []byte(`{"replicaCount":2,"ingress":{"enabled":true}}`)},
				ValuesFrom: []gitsyncv1.ValuesReference{{Kind: "Secret", Name: "vals", Key: "values.yaml", Optional: true}}},
			HealthChecks: []gitsyncv1.HealthCheck{{APIVersion: "example.com/v1", Kind: "Widget", Current: "self.status.ready == true"}},
			PostBuild:    &gitsyncv1.PostBuild{Substitute: map[string]string{"ENV": "prod"}},
			Patches:      []gitsyncv1.Patch{{Patch: "- op: add\n  path: /metadata/labels/x\n  value: y\n", Target: &gitsyncv1.PatchSelector{Kind: "Deployment"}}},
			Images:       []gitsyncv1.Image{{Name: "nginx", NewTag: "1.27"}},
		},
	}
}

// A v1alpha1 object is stored as v1beta1 and read back in both versions through the real
// API server calling the webhook, field for field the same; so is a v1beta1 object read
// as v1alpha1, status included. With the webhook gone, v1alpha1 can no longer be read
// while v1beta1 (the stored version) still can: the conversion went through it.
func TestConvertsThroughTheAPIServer(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	s := start(t, ns, Options{})

	alpha := application(ns, "alpha")
	g.Expect(env.Client.Create(ctx, alpha)).To(Succeed())
	beta := &v1beta1.Application{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(alpha), beta)).To(Succeed())
	g.Expect(beta.Spec.Helm.Chart).To(Equal("podinfo"))
	g.Expect(beta.Annotations).To(HaveKeyWithValue("team", "a"))
	g.Expect(specAndStatus(t, beta)).To(Equal(specAndStatus(t, alpha)))

	beta.Status.LastAppliedRevision = "main@sha1:" + fmt.Sprintf("%040d", 1)
	beta.Status.Sync = &v1beta1.SyncInfo{Status: v1beta1.SyncStatusSynced, Revision: beta.Status.LastAppliedRevision}
	beta.Status.Inventory = &v1beta1.Inventory{Entries: []v1beta1.InventoryEntry{{ID: "apps_web_apps_Deployment", V: "v1"}}}
	beta.Status.History = []v1beta1.SyncHistoryEntry{{Revision: beta.Status.LastAppliedRevision, StartedAt: metav1.Now(), Result: v1beta1.SyncResultSucceeded, Created: 3}}
	g.Expect(env.Client.Status().Update(ctx, beta)).To(Succeed())
	back := &gitsyncv1.Application{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(alpha), back)).To(Succeed())
	g.Expect(back.Status.Inventory.Entries).To(HaveLen(1))
	g.Expect(specAndStatus(t, back)).To(Equal(specAndStatus(t, beta)))

	repo := &v1beta1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "repo"},
		Spec: v1beta1.GitRepositorySpec{URL: "https://git.example.com/a.git", Ref: &v1beta1.GitRepositoryRef{Tag: "v1.0.0"},
			SecretRef: &v1beta1.LocalObjectReference{Name: "creds"}, Ignore: "/docs\n*.md\n", Suspend: true},
	}
	g.Expect(env.Client.Create(ctx, repo)).To(Succeed())
	repoAlpha := &gitsyncv1.GitRepository{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(repo), repoAlpha)).To(Succeed())
	g.Expect(repoAlpha.Spec.Ref.Tag).To(Equal("v1.0.0"))
	g.Expect(specAndStatus(t, repoAlpha)).To(Equal(specAndStatus(t, repo)))

	helmAlpha := &gitsyncv1.HelmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "charts"},
		Spec: gitsyncv1.HelmRepositorySpec{URL: "oci://registry.example.com/charts"}}
	g.Expect(env.Client.Create(ctx, helmAlpha)).To(Succeed())
	helmBeta := &v1beta1.HelmRepository{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(helmAlpha), helmBeta)).To(Succeed())
	g.Expect(specAndStatus(t, helmBeta)).To(Equal(specAndStatus(t, helmAlpha)))

	s.stop()
	g.Eventually(func() error {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(alpha), &gitsyncv1.Application{})
	}).WithTimeout(10*time.Second).WithPolling(100*time.Millisecond).Should(MatchError(ContainSubstring("conversion webhook")),
		"v1alpha1 was served without the webhook")
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(alpha), &v1beta1.Application{})).To(Succeed())
}

// With CRDs that name no conversion webhook (config/crd/bases, as tests and the demo
// install them), Setup turns the webhook off and readiness does not wait for it; with
// some that do and some that do not, it fails (cert-controller would retry for 17
// minutes or more and then stop the manager).
func TestSetupWithoutWebhookCRDs(t *testing.T) {
	g := NewWithT(t)
	setup := func() (*Webhook, bool, error) {
		mgr, err := manager.New(env.Config, manager.Options{Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
		g.Expect(err).NotTo(HaveOccurred())
		w := New(Options{Namespace: env.Namespace(t), ControllerName: "conversion-cert-off"})
		on, err := w.Setup(context.Background(), mgr)
		return w, on, err
	}
	w, on, err := setup()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(on).To(BeFalse())
	g.Expect(w.Checker(nil)).To(Succeed())

	t.Cleanup(func() { setConversion(t, nil) })
	url := "https://localhost:1/convert"
	crd := &apiextensionsv1.CustomResourceDefinition{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Name: CRDs[0]}, crd)).To(Succeed())
	crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{ClientConfig: &apiextensionsv1.WebhookClientConfig{URL: &url}, ConversionReviewVersions: []string{"v1"}}}
	g.Expect(env.Client.Update(context.Background(), crd)).To(Succeed())
	_, on, err = setup()
	g.Expect(on).To(BeFalse())
	g.Expect(err).To(MatchError(ContainSubstring("install all of config/crd")))
}

// In a cluster the CRDs name the Service: the Secret goes to its namespace, the
// certificate is issued for <service>.<namespace>.svc, and its CA is injected.
func TestServiceFromCRDs(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	t.Cleanup(func() { setConversion(t, nil) })
	path := Path
	setConversion(t, &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ClientConfig: &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{
				Namespace: ns, Name: "gitsync-conversion", Path: &path}},
			ConversionReviewVersions: []string{"v1"},
		},
	})
	w := New(Options{CertDir: t.TempDir(), ControllerName: "conversion-cert-service"})
	mgr, err := manager.New(env.Config, manager.Options{
		Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: freePort(t), TLSOpts: []func(*tls.Config){w.TLSOpt}}),
	})
	g.Expect(err).NotTo(HaveOccurred())
	mctx, cancel := context.WithCancel(ctx)
	g.Expect(w.Setup(mctx, mgr)).To(BeTrue())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	defer func() { cancel(); g.Expect(<-done).To(Succeed()) }()
	g.Eventually(w.Ready()).WithTimeout(30 * time.Second).Should(BeClosed())
	g.Expect(w.Checker(nil)).To(Succeed())

	secret := &corev1.Secret{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: DefaultSecretName}, secret)).To(Succeed())
	block, _ := pem.Decode(secret.Data[corev1.TLSCertKey])
	g.Expect(block).NotTo(BeNil())
	cert, err := x509.ParseCertificate(block.Bytes)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cert.DNSNames).To(ConsistOf("gitsync-conversion."+ns+".svc", "gitsync-conversion."+ns+".svc.cluster.local"))
	for _, name := range CRDs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, crd)).To(Succeed())
		g.Expect(crd.Spec.Conversion.Webhook.ClientConfig.CABundle).To(Equal(secret.Data["ca.crt"]), name)
	}
}
