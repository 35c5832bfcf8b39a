// Package conversion serves the conversion webhook of gitsync's multi-version CRDs with a serving certificate the operator manages itself.
//
// The certificate and its CA are issued by open-policy-agent/cert-controller's rotator,
// kept in a Secret of the operator's namespace, renewed before they expire and injected
// into each CRD's spec.conversion.webhook.clientConfig.caBundle. Every replica reads
// the Secret through a watch and serves what it holds from memory: a renewed
// certificate is served at once, with no Secret volume to wait for.
package conversion

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crconversion "sigs.k8s.io/controller-runtime/pkg/webhook/conversion"
)

// Path is where the webhook server answers ConversionReviews (the CRDs' clientConfig path).
const Path = "/convert"

// Defaults of Options.
const (
	DefaultSecretName  = "gitsync-conversion-cert"
	DefaultServiceName = "gitsync-conversion"
	// DefaultCertDir is controller-runtime's webhook certificate directory, which the
	// manager's Deployment keeps on its writable /tmp volume.
	DefaultCertDir = "/tmp/k8s-webhook-server/serving-certs"
)

// CRDs are the CustomResourceDefinitions served in more than one version, whose
// conversion this webhook does.
var CRDs = []string{"applications.gitsync.dev", "gitrepositories.gitsync.dev", "helmrepositories.gitsync.dev"}

// Options of the conversion webhook. Zero durations are
// cert-controller's defaults (CA 10 years, certificate 1 year, renewed 90 days before it
// expires, checked every 12 hours).
type Options struct {
	// Namespace of the Secret, and of the Service the certificate is issued for; default:
	// the namespace of the Service the CRDs name (required when they name a URL).
	Namespace string
	// SecretName holds ca.crt, ca.key, tls.crt and tls.key (created when missing).
	SecretName string
	// ServiceName is the Service in front of the webhook; the certificate is issued for
	// <ServiceName>.<Namespace>.svc (and .svc.cluster.local). Default: the Service the
	// CRDs name, else DefaultServiceName.
	ServiceName string
	// DNSName, when set, is the certificate's name instead (a webhook reached by URL).
	DNSName string
	// CertDir receives tls.crt and tls.key as the Secret holds them.
	CertDir string
	// CRDs to inject the CA into; default CRDs.
	CRDs []string

	CAValidity, CertValidity, RenewBefore, CheckInterval time.Duration

	// ControllerName of the rotator's controller; names are unique in a process.
	ControllerName string
}

// Webhook is the conversion webhook of one operator process.
type Webhook struct {
	opts  Options
	cert  atomic.Pointer[tls.Certificate]
	ready chan struct{}
	// off is set when Setup found no CRD naming a conversion webhook.
	off atomic.Bool
}

// New returns the webhook for opts, with defaults filled in.
func New(opts Options) *Webhook {
	if opts.SecretName == "" {
		opts.SecretName = DefaultSecretName
	}
	if opts.CertDir == "" {
		opts.CertDir = DefaultCertDir
	}
	if len(opts.CRDs) == 0 {
		opts.CRDs = CRDs
	}
	if opts.ControllerName == "" {
		opts.ControllerName = "conversion-cert"
	}
	return &Webhook{opts: opts, ready: make(chan struct{})}
}

// TLSOpt makes the webhook server (webhook.Options.TLSOpts) serve the certificate of the
// Secret; until the first one is read, handshakes fail.
func (w *Webhook) TLSOpt(cfg *tls.Config) {
	cfg.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		if c := w.cert.Load(); c != nil {
			return c, nil
		}
		return nil, errors.New("no conversion webhook certificate yet")
	}
}

// Ready is closed once a certificate is served and its CA is in every CRD (never, when
// Setup turned the webhook off).
func (w *Webhook) Ready() <-chan struct{} { return w.ready }

// Checker is a healthz.Checker for the readiness probe: ready once Ready is closed, or
// when Setup turned the webhook off.
func (w *Webhook) Checker(*http.Request) error {
	if w.off.Load() {
		return nil
	}
	select {
	case <-w.ready:
		return nil
	default:
		return errors.New("the conversion webhook's certificate is not in place yet")
	}
}

// Register adds the conversion handler alone to mgr's webhook server: for a certificate
// that someone else issues and injects (OLM), read from the server's CertDir.
func Register(mgr manager.Manager) {
	mgr.GetWebhookServer().Register(Path, crconversion.NewWebhookHandler(mgr.GetScheme(), mgr.GetConverterRegistry()))
}

// Setup looks at the CRDs: when none names a conversion webhook (config/crd/bases, as
// the local API server of tests and of `gitsync demo` installs them: the API server
// converts by relabelling, exact while the versions' schemas are equal), it turns the
// webhook off and returns false. When all do (config/crd, the chart, the bundle), it
// registers the conversion handler on mgr's webhook server (whose TLSOpts must hold
// TLSOpt), makes sure the Secret exists (in the namespace of the Service the CRDs name,
// unless Options say otherwise), adds the rotator and the Secret's watch to mgr, and
// returns true; they run on every replica, leader or not: each one serves. Some but not
// all is an error.
func (w *Webhook) Setup(ctx context.Context, mgr manager.Manager) (bool, error) {
	c, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return false, fmt.Errorf("conversion webhook: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	on, service, err := webhookCRDs(ctx, c, w.opts.CRDs)
	if err != nil || !on {
		w.off.Store(err == nil)
		return false, err
	}
	if service != nil && w.opts.Namespace == "" {
		w.opts.Namespace = service.Namespace
	}
	if w.opts.ServiceName == "" {
		w.opts.ServiceName = DefaultServiceName
		if service != nil {
			w.opts.ServiceName = service.Name
		}
	}
	if w.opts.Namespace == "" {
		return false, errors.New("conversion webhook: no namespace for the certificate's Secret (the CRDs name a URL, not a Service)")
	}
	key := types.NamespacedName{Namespace: w.opts.Namespace, Name: w.opts.SecretName}
	Register(mgr)
	if err := ensureSecret(ctx, c, key); err != nil {
		return false, err
	}
	if err := mgr.Add(&secretWatch{config: mgr.GetConfig(), key: key, certDir: w.opts.CertDir, cert: &w.cert}); err != nil {
		return false, err
	}

	dnsName := w.opts.DNSName
	var extra []string
	if dnsName == "" {
		dnsName = w.opts.ServiceName + "." + w.opts.Namespace + ".svc"
		extra = []string{dnsName + ".cluster.local"}
	}
	webhooks := make([]rotator.WebhookInfo, len(w.opts.CRDs))
	for i, name := range w.opts.CRDs {
		webhooks[i] = rotator.WebhookInfo{Name: name, Type: rotator.CRDConversion}
	}
	err = rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey:              key,
		CertDir:                w.opts.CertDir,
		CAName:                 "gitsync-conversion-ca",
		CAOrganization:         "gitsync",
		DNSName:                dnsName,
		ExtraDNSNames:          extra,
		IsReady:                w.ready,
		Webhooks:               webhooks,
		FieldOwner:             "gitsync-conversion",
		CaCertDuration:         w.opts.CAValidity,
		ServerCertDuration:     w.opts.CertValidity,
		LookaheadInterval:      w.opts.RenewBefore,
		RotationCheckFrequency: w.opts.CheckInterval,
		ControllerName:         w.opts.ControllerName,
	})
	if err != nil {
		return false, fmt.Errorf("conversion webhook: adding the certificate rotator: %w", err)
	}
	return true, nil
}
