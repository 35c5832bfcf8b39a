package application

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/chartrepo"
	"github.com/gitsync-dev/gitsync/internal/verify"
)

// verifyChart checks the chart archive at path as the HelmRepository's spec.verify says
// (its provenance file against the keyring, or the cosign or notation signature of its
// OCI manifest) and records the signer for history. Fails closed: no signature, another
// key or another digest stop the steps before the render (Ready=False
// VerificationFailed, stalled until the index or the spec changes; what was applied
// before stays). ok is true when the steps go on.
func (r *Reconciler) verifyChart(ctx context.Context, s *syncRun, loc *chartLocation, path string) (out outcome, ok bool) {
	v := loc.repo.Spec.Verify
	if v == nil {
		return done(), true
	}
	src, err := r.helmSource(ctx, s.app, loc.repo) // checks the tenant's access to the keyring too
	if err != nil {
		return revisionRetry(gitsyncv1.SecretNotFoundReason, err), false
	}
	key := types.NamespacedName{Namespace: loc.repo.Namespace, Name: v.SecretRef.Name}
	secret := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, key, secret); err != nil {
		return revisionRetry(gitsyncv1.SecretNotFoundReason, fmt.Errorf("reading keyring secret %s: %w", key, err)), false
	}
	if chartrepo.IsOCI(loc.repo.Spec.URL) {
		check := verify.OCICheck{Provider: v.Provider, Keys: secret.Data, Identities: oidcIdentities(v.MatchOIDCIdentity)}
		return r.verifyOCIChart(ctx, s, loc, src, path, check)
	}
	ring, err := verify.ParseKeyring(secret.Data)
	if err != nil {
		return r.revisionStalled(s, gitsyncv1.VerificationFailedReason, fmt.Sprintf("keyring secret %s: %v", key, err)), false
	}
	prov, err := r.Charts.Provenance(ctx, src, loc.version, path)
	switch {
	case errors.Is(err, chartrepo.ErrNoProvenance) || errors.Is(err, chartrepo.ErrTooLarge):
		return r.revisionStalled(s, gitsyncv1.VerificationFailedReason, fmt.Sprintf("verifying chart %s: %v", loc.revision, err)), false
	case err != nil:
		return revisionRetry(gitsyncv1.ChartPullFailedReason, fmt.Errorf("pulling the provenance file of chart %s: %w", loc.revision, err)), false
	}
	archive, err := os.ReadFile(path) // at most chartrepo.MaxChartSize: the download is capped
	if err != nil {
		return retry(err), false
	}
	signer, err := verify.Provenance(archive, loc.version.URLs[0], prov, ring)
	if err != nil {
		return r.revisionStalled(s, gitsyncv1.VerificationFailedReason, fmt.Sprintf("verifying chart %s: %v", loc.revision, err)), false
	}
	s.signer = signer.String()
	return done(), true
}

// verifyOCIChart checks the cosign or notation signature of the manifest that holds the
// chart archive at path. A signature that does not verify stalls the revision; a registry
// that cannot be read is retried.
func (r *Reconciler) verifyOCIChart(ctx context.Context, s *syncRun, loc *chartLocation, src chartrepo.Source, path string,
	check verify.OCICheck) (outcome, bool) {
	signer, err := r.Charts.VerifyOCI(ctx, src, loc.version, path, func(ctx context.Context, ref name.Digest, opts ...remote.Option) (string, error) {
		signer, err := verify.OCI(ctx, ref, check, opts...)
		return signer.String(), err
	})
	switch {
	case errors.Is(err, verify.ErrUnverified):
		return r.revisionStalled(s, gitsyncv1.VerificationFailedReason, fmt.Sprintf("verifying chart %s: %v", loc.revision, err)), false
	case err != nil:
		return revisionRetry(gitsyncv1.VerificationFailedReason, fmt.Errorf("verifying chart %s: %w", loc.revision, err)), false
	}
	s.signer = signer
	return done(), true
}

// oidcIdentities is spec.verify.matchOIDCIdentity as internal/verify takes it.
func oidcIdentities(in []gitsyncv1.OIDCIdentityMatch) []verify.Identity {
	out := make([]verify.Identity, 0, len(in))
	for _, m := range in {
		out = append(out, verify.Identity{Issuer: m.Issuer, Subject: m.Subject})
	}
	return out
}
