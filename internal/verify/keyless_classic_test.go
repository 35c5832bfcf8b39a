package verify_test

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/gitsync-dev/gitsync/internal/testutil/signing"
	"github.com/gitsync-dev/gitsync/internal/verify"
)

// Keyless signatures in cosign's classic layout (a certificate and a Rekor bundle
// annotation on the `.sig` image's layer) verify under the trusted root like bundles.
func TestOCICosignKeylessClassic(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	ctx := context.Background()
	sigstore, otherSigstore := signing.NewSigstore(t), signing.NewSigstore(t)
	check := verify.OCICheck{Provider: verify.ProviderCosign, Keys: map[string][]byte{verify.TrustedRootKey: sigstore.TrustedRoot(t)},
		Identities: []verify.Identity{{Issuer: `https://ci\.example\.test`, Subject: `https://git\.example\.test/org/app/\.ci/release\.yaml@refs/tags/v.*`}}}

	signed := pushArtifact(t, host, "apps/classic-keyless")
	sigstore.CosignClassic(t, signed, signed.DigestStr(), ciSubject, ciIssuer)
	s, err := verify.OCI(ctx, signed, check)
	if err != nil {
		t.Fatalf("classic keyless, matching identity: %v", err)
	}
	if want := ciSubject + " (issuer " + ciIssuer + ")"; s.String() != want {
		t.Errorf("signer = %q, want %q", s.String(), want)
	}

	wrongSubject := pushArtifact(t, host, "apps/classic-wrong-subject")
	sigstore.CosignClassic(t, wrongSubject, wrongSubject.DigestStr(), "someone@example.test", ciIssuer)
	otherRoot := pushArtifact(t, host, "apps/classic-other-root")
	otherSigstore.CosignClassic(t, otherRoot, otherRoot.DigestStr(), ciSubject, ciIssuer)
	replayed := pushArtifact(t, host, "apps/classic-replayed")
	sigstore.CosignClassic(t, replayed, signed.DigestStr(), ciSubject, ciIssuer)
	byKey := pushArtifact(t, host, "apps/classic-key")
	signing.Cosign(t, byKey, signing.NewCosignKey(t), byKey.DigestStr())
	for _, tc := range []struct{ name, ref, want string }{
		{"wrong subject", wrongSubject.String(), "no keyless cosign signature verified"},
		{"another root", otherRoot.String(), "no keyless cosign signature verified"},
		{"signature of another digest", replayed.String(), "not this digest"},
		{"a key pair's signature", byKey.String(), "not a keyless signature"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref := mustDigest(t, tc.ref)
			s, err := verify.OCI(ctx, ref, check)
			if !errors.Is(err, verify.ErrUnverified) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), ref.DigestStr()) {
				t.Errorf("signer %q, err = %v, want ErrUnverified saying %q", s, err, tc.want)
			}
		})
	}
}
