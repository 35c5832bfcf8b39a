package operator

import (
	"context"
	"crypto/tls"

	ctrl "sigs.k8s.io/controller-runtime"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/gitsync-dev/gitsync/internal/conversion"
)

// conversionServer is the manager's webhook server, which serves the CRDs' conversion
// webhook (/convert) on opts.ConversionPort, and the certificate manager behind it: the
// operator's own (issued, renewed and injected into the CRDs), unless
// opts.ConversionCertDir holds one issued by someone else (OLM) — then nil.
func conversionServer(opts Options) (crwebhook.Server, *conversion.Webhook) {
	webhookOpts := crwebhook.Options{Port: opts.ConversionPort, CertDir: opts.ConversionCertDir}
	var conv *conversion.Webhook
	if opts.ConversionPort > 0 && opts.ConversionCertDir == "" {
		conv = conversion.New(opts.Conversion)
		webhookOpts.TLSOpts = []func(*tls.Config){conv.TLSOpt}
	}
	return crwebhook.NewServer(webhookOpts), conv
}

// setupConversion registers the conversion webhook when the CRDs name one (config/crd,
// the chart, the bundle; not config/crd/bases, which tests and the demo install), with a
// readiness check that keeps a replica out of the Service until its certificate is in
// place.
func setupConversion(mgr ctrl.Manager, conv *conversion.Webhook, opts Options) error {
	switch {
	case conv != nil:
		on, err := conv.Setup(context.Background(), mgr)
		if err != nil || !on {
			return err
		}
		return mgr.AddReadyzCheck("conversion", conv.Checker)
	case opts.ConversionPort > 0:
		conversion.Register(mgr)
	}
	return nil
}
