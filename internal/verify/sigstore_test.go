package verify_test

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/gitsync-dev/gitsync/internal/testutil/signing"
	"github.com/gitsync-dev/gitsync/internal/verify"
)

const (
	ciIssuer  = "https://ci.example.test"
	ciSubject = "https://git.example.test/org/app/.ci/release.yaml@refs/tags/v1"
)

func TestOCICosignKeylessBundles(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	ctx := context.Background()
	sigstore, otherSigstore := signing.NewSigstore(t), signing.NewSigstore(t)
	keys := map[string][]byte{verify.TrustedRootKey: sigstore.TrustedRoot(t)}
	identities := []verify.Identity{
		{Issuer: `https://other\.example\.test`, Subject: `.*`},
		{Issuer: `https://ci\.example\.test`, Subject: `https://git\.example\.test/org/app/\.ci/release\.yaml@refs/tags/v.*`},
	}
	check := verify.OCICheck{Provider: verify.ProviderCosign, Keys: keys, Identities: identities}

	signed := pushArtifact(t, host, "apps/keyless")
	signing.AttachBundle(t, signed, sigstore.Bundle(t, signing.SignStatement(t, signed.Context().Name(), signed.DigestStr()), ciSubject, ciIssuer))
	s, err := verify.OCI(ctx, signed, check)
	if err != nil {
		t.Fatalf("keyless bundle, matching identity: %v", err)
	}
	if want := ciSubject + " (issuer " + ciIssuer + ")"; s.String() != want || s.Scheme != "cosign" {
		t.Errorf("signer = %q (%+v), want %q", s.String(), s, want)
	}

	// A root without a Rekor log: the timestamp authority's time is enough.
	tsaOnly := verify.OCICheck{Provider: verify.ProviderCosign, Keys: map[string][]byte{verify.TrustedRootKey: sigstore.TrustedRootWithoutLog(t)}, Identities: identities}
	if s, err := verify.OCI(ctx, signed, tsaOnly); err != nil || s.String() != ciSubject+" (issuer "+ciIssuer+")" {
		t.Errorf("root without a log: signer %q, err %v", s, err)
	}

	// Each refusal below is a reason of its own.
	wrongSubject := pushArtifact(t, host, "apps/wrong-subject")
	signing.AttachBundle(t, wrongSubject, sigstore.Bundle(t, signing.SignStatement(t, wrongSubject.Context().Name(), wrongSubject.DigestStr()),
		"https://git.example.test/org/app/.ci/release.yaml@refs/heads/feature", ciIssuer))
	// The expressions are anchored: a subject that only contains a match is refused.
	prefixed := pushArtifact(t, host, "apps/prefixed")
	signing.AttachBundle(t, prefixed, sigstore.Bundle(t, signing.SignStatement(t, prefixed.Context().Name(), prefixed.DigestStr()),
		"evil+"+ciSubject, ciIssuer))
	wrongIssuer := pushArtifact(t, host, "apps/wrong-issuer")
	signing.AttachBundle(t, wrongIssuer, sigstore.Bundle(t, signing.SignStatement(t, wrongIssuer.Context().Name(), wrongIssuer.DigestStr()),
		ciSubject, "https://ci.example.test.evil"))
	otherRoot := pushArtifact(t, host, "apps/other-root")
	signing.AttachBundle(t, otherRoot, otherSigstore.Bundle(t, signing.SignStatement(t, otherRoot.Context().Name(), otherRoot.DigestStr()), ciSubject, ciIssuer))
	unsigned := pushArtifact(t, host, "apps/unsigned")
	// A valid bundle of another artifact's digest, attached to this one.
	tampered := pushArtifact(t, host, "apps/tampered")
	signing.AttachBundle(t, tampered, sigstore.Bundle(t, signing.SignStatement(t, signed.Context().Name(), signed.DigestStr()), ciSubject, ciIssuer))
	// An attestation (an SBOM) by the right identity is not a signature.
	attested := pushArtifact(t, host, "apps/attested")
	signing.AttachBundle(t, attested, sigstore.Bundle(t, signing.Attestation(t, attested.Context().Name(), attested.DigestStr()), ciSubject, ciIssuer))
	// A key-pair signature in the classic layout does not satisfy a keyless check.
	classic := pushArtifact(t, host, "apps/classic")
	key := signing.NewCosignKey(t)
	signing.Cosign(t, classic, key, classic.DigestStr())
	for _, tc := range []struct {
		name, ref, want string
		check           verify.OCICheck
		refDigest       string
		unverified      bool
	}{
		{"wrong subject", wrongSubject.String(), "no Sigstore bundle verified", check, wrongSubject.DigestStr(), true},
		{"subject only contains a match", prefixed.String(), "no Sigstore bundle verified", check, prefixed.DigestStr(), true},
		{"wrong issuer", wrongIssuer.String(), "no Sigstore bundle verified", check, wrongIssuer.DigestStr(), true},
		{"another root", otherRoot.String(), "no Sigstore bundle verified", check, otherRoot.DigestStr(), true},
		{"unsigned", unsigned.String(), "has no Sigstore bundle", check, unsigned.DigestStr(), true},
		{"bundle of another digest", tampered.String(), "no Sigstore bundle verified", check, tampered.DigestStr(), true},
		{"attestation", attested.String(), "not a signature", check, attested.DigestStr(), true},
		{"classic key-pair signature", classic.String(), "has no Sigstore bundle", check, classic.DigestStr(), true},
		{"no identity", signed.String(), "matchOIDCIdentity is required", verify.OCICheck{Provider: verify.ProviderCosign, Keys: keys}, "", false},
		{"unanchored garbage", signed.String(), "matchOIDCIdentity[0]", verify.OCICheck{Provider: verify.ProviderCosign, Keys: keys,
			Identities: []verify.Identity{{Issuer: "(", Subject: ".*"}}}, "", false},
		{"identity with public keys", signed.String(), "has no trusted_root.json", verify.OCICheck{Provider: verify.ProviderCosign,
			Keys: map[string][]byte{"cosign.pub": key.Public}, Identities: identities}, "", false},
		{"another root, no log in the root", otherRoot.String(), "failed to verify timestamps", verify.OCICheck{Provider: verify.ProviderCosign,
			Keys: map[string][]byte{verify.TrustedRootKey: sigstore.TrustedRootWithoutLog(t)}, Identities: identities}, otherRoot.DigestStr(), true},
		{"broken root", signed.String(), "reading trusted_root.json", verify.OCICheck{Provider: verify.ProviderCosign,
			Keys: map[string][]byte{verify.TrustedRootKey: []byte("{}")}, Identities: identities}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref := mustDigest(t, tc.ref)
			s, err := verify.OCI(ctx, ref, tc.check)
			if err == nil {
				t.Fatalf("verified as %q, want an error", s)
			}
			if errors.Is(err, verify.ErrUnverified) != tc.unverified || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.refDigest) {
				t.Errorf("err = %v, want one saying %q (ErrUnverified: %v)", err, tc.want, tc.unverified)
			}
		})
	}
}

func TestOCICosignKeyPairBundles(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	ctx := context.Background()
	key, other := signing.NewCosignKey(t), signing.NewCosignKey(t)
	check := verify.OCICheck{Provider: verify.ProviderCosign, Keys: map[string][]byte{"other.pub": other.Public, "cosign.pub": key.Public}}

	signed := pushArtifact(t, host, "apps/bundle")
	signing.AttachBundle(t, signed, signing.KeyBundle(t, key, signing.SignStatement(t, signed.Context().Name(), signed.DigestStr())))
	s, err := verify.OCI(ctx, signed, check)
	if err != nil {
		t.Fatalf("key-pair bundle: %v", err)
	}
	if want := (verify.Signer{Scheme: "cosign", Fingerprint: key.Fingerprint, Identity: "cosign.pub"}); s != want {
		t.Errorf("signer = %+v, want %+v", s, want)
	}

	byOther := pushArtifact(t, host, "apps/bundle-other")
	signing.AttachBundle(t, byOther, signing.KeyBundle(t, other, signing.SignStatement(t, byOther.Context().Name(), byOther.DigestStr())))
	onlyKey := verify.OCICheck{Provider: verify.ProviderCosign, Keys: map[string][]byte{"cosign.pub": key.Public}}
	tampered := pushArtifact(t, host, "apps/bundle-tampered")
	signing.AttachBundle(t, tampered, signing.KeyBundle(t, key, signing.SignStatement(t, signed.Context().Name(), signed.DigestStr())))
	// A keyless bundle: its certificate is not one of the keys.
	keyless := pushArtifact(t, host, "apps/bundle-keyless")
	sigstore := signing.NewSigstore(t)
	signing.AttachBundle(t, keyless, sigstore.Bundle(t, signing.SignStatement(t, keyless.Context().Name(), keyless.DigestStr()), ciSubject, ciIssuer))
	for _, tc := range []struct {
		name string
		ref  string
		want string
	}{
		{"another key", byOther.String(), "no Sigstore bundle verified"},
		{"bundle of another digest", tampered.String(), "no Sigstore bundle verified"},
		{"keyless bundle", keyless.String(), "no Sigstore bundle verified"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref := mustDigest(t, tc.ref)
			s, err := verify.OCI(ctx, ref, onlyKey)
			if !errors.Is(err, verify.ErrUnverified) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), ref.DigestStr()) {
				t.Errorf("signer %q, err = %v, want ErrUnverified saying %q", s, err, tc.want)
			}
		})
	}
}

func mustDigest(t *testing.T, s string) name.Digest {
	t.Helper()
	d, err := name.NewDigest(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
