package verify

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/sigstore-go/pkg/root"
	sgverify "github.com/sigstore/sigstore-go/pkg/verify"
)

// cosignSignPredicate is the predicate type of the in-toto statement cosign v3 signs for
// an image (its subject: the manifest's digest).
const cosignSignPredicate = "https://sigstore.dev/cosign/sign/v1"

// cosignKeyless verifies the Sigstore bundles of ref against the trusted root rootJSON
// and the identities (see OCI).
func cosignKeyless(ctx context.Context, ref name.Digest, rootJSON []byte, identities []Identity, opts ...remote.Option) (Signer, error) {
	if len(identities) == 0 {
		return Signer{}, errors.New("matchOIDCIdentity is required for keyless verification: at least one {issuer, subject} the signing certificate must match")
	}
	trusted, err := root.NewTrustedRootFromJSON(rootJSON)
	if err != nil {
		return Signer{}, fmt.Errorf("reading %s: %w", TrustedRootKey, err)
	}
	if len(trusted.FulcioCertificateAuthorities()) == 0 {
		return Signer{}, fmt.Errorf("%s has no certificate authority", TrustedRootKey)
	}
	vopts := []sgverify.VerifierOption{sgverify.WithObserverTimestamps(1)}
	if len(trusted.RekorLogs()) > 0 {
		vopts = append(vopts, sgverify.WithTransparencyLog(1))
	}
	if len(trusted.CTLogs()) > 0 {
		vopts = append(vopts, sgverify.WithSignedCertificateTimestamps(1))
	}
	v, err := sgverify.NewVerifier(trusted, vopts...)
	if err != nil {
		return Signer{}, fmt.Errorf("sigstore verifier: %w", err)
	}
	var popts []sgverify.PolicyOption
	for i, id := range identities {
		ci, err := certificateIdentity(id)
		if err != nil {
			return Signer{}, fmt.Errorf("matchOIDCIdentity[%d]: %w", i, err)
		}
		popts = append(popts, sgverify.WithCertificateIdentity(ci))
	}
	signer, bundleErr := verifyBundles(ctx, ref, []bundleVerifier{{verifier: v, policy: popts, signer: keylessSigner}}, opts...)
	if bundleErr == nil || !errors.Is(bundleErr, ErrUnverified) {
		return signer, bundleErr
	}
	signer, classicErr := classicKeyless(ctx, ref, v, popts, opts...)
	if classicErr == nil || !errors.Is(classicErr, ErrUnverified) {
		return signer, classicErr
	}
	return Signer{}, fmt.Errorf("%w; %w", bundleErr, classicErr)
}

// cosignKeyPair verifies ref's cosign signatures by the Secret's PEM public keys: in the
// classic layout first, then its Sigstore bundles.
func cosignKeyPair(ctx context.Context, ref name.Digest, data map[string][]byte, opts ...remote.Option) (Signer, error) {
	keys, err := parsePublicKeys(data)
	if err != nil {
		return Signer{}, err
	}
	signer, classicErr := cosignClassic(ctx, ref, keys, opts...)
	if classicErr == nil || !errors.Is(classicErr, ErrUnverified) {
		return signer, classicErr
	}
	var verifiers []bundleVerifier
	for _, k := range keys {
		// The bundle's key hint is not trusted to pick the key: each key is tried.
		material := root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) {
			return root.NewExpiringKey(k.verifier, time.Time{}, time.Time{}), nil
		})
		// A key pair's Secret gives no log key nor timestamp authority: the signature
		// alone is checked, as in the classic layout.
		v, err := sgverify.NewVerifier(material, sgverify.WithNoObserverTimestamps())
		if err != nil {
			return Signer{}, fmt.Errorf("sigstore verifier: %w", err)
		}
		verifiers = append(verifiers, bundleVerifier{verifier: v, policy: []sgverify.PolicyOption{sgverify.WithKey()},
			signer: func(*sgverify.VerificationResult) Signer {
				return Signer{Scheme: "cosign", Fingerprint: k.fingerprint, Identity: k.name}
			}})
	}
	signer, bundleErr := verifyBundles(ctx, ref, verifiers, opts...)
	if bundleErr == nil || !errors.Is(bundleErr, ErrUnverified) {
		return signer, bundleErr
	}
	return Signer{}, fmt.Errorf("%w; %w", classicErr, bundleErr)
}

// bundleVerifier is one way a bundle may verify: a sigstore-go verifier over trusted
// material, the policy's options besides the artifact, and the signer it names.
type bundleVerifier struct {
	verifier *sgverify.Verifier
	policy   []sgverify.PolicyOption
	signer   func(*sgverify.VerificationResult) Signer
}

// verifyBundles returns the signer of the first of ref's Sigstore bundles that one of vs
// verifies for ref's manifest digest.
func verifyBundles(ctx context.Context, ref name.Digest, vs []bundleVerifier, opts ...remote.Option) (Signer, error) {
	digest, err := hex.DecodeString(strings.TrimPrefix(ref.DigestStr(), "sha256:"))
	if err != nil || len(digest) != 32 || !strings.HasPrefix(ref.DigestStr(), "sha256:") {
		return Signer{}, fmt.Errorf("%s is not a sha256 digest", ref.DigestStr())
	}
	bundles, reasons, err := sigstoreBundles(ctx, ref, opts...)
	if err != nil {
		return Signer{}, err
	}
	if len(bundles) == 0 && len(reasons) == 0 {
		return Signer{}, fmt.Errorf("%w: %s has no Sigstore bundle", ErrUnverified, ref)
	}
	for _, b := range bundles {
		var last error
		for _, bv := range vs {
			res, err := bv.verifier.Verify(b.bundle, sgverify.NewPolicy(sgverify.WithArtifactDigest("sha256", digest), bv.policy...))
			if err == nil {
				err = signsImage(res)
			}
			if err == nil {
				return bv.signer(res), nil
			}
			last = err
		}
		reasons = append(reasons, fmt.Sprintf("bundle %s: %v", b.digest, last))
	}
	return Signer{}, fmt.Errorf("%w: %s: no Sigstore bundle verified (%s)", ErrUnverified, ref, strings.Join(reasons, "; "))
}

// signsImage refuses an in-toto statement that is not cosign's image signature (an
// attestation, such as an SBOM or provenance, says something else about the artifact).
// A message signature has no statement: it signs the manifest's digest itself.
func signsImage(res *sgverify.VerificationResult) error {
	if res.Statement != nil && res.Statement.GetPredicateType() != cosignSignPredicate {
		return fmt.Errorf("an attestation of predicate type %q, not a signature (%s)", res.Statement.GetPredicateType(), cosignSignPredicate)
	}
	return nil
}

// keylessSigner names the verified certificate's identity: "<subject> (issuer <issuer>)".
func keylessSigner(res *sgverify.VerificationResult) Signer {
	var subject, issuer string
	if res.Signature != nil && res.Signature.Certificate != nil {
		subject = res.Signature.Certificate.SubjectAlternativeName
		issuer = res.Signature.Certificate.Issuer
	}
	return Signer{Scheme: "cosign", Identity: subject + " (issuer " + issuer + ")"}
}

// certificateIdentity is id as sigstore-go's matcher, each expression anchored.
func certificateIdentity(id Identity) (sgverify.CertificateIdentity, error) {
	if id.Issuer == "" || id.Subject == "" {
		return sgverify.CertificateIdentity{}, errors.New("issuer and subject are both required")
	}
	for _, re := range []string{id.Issuer, id.Subject} {
		if _, err := regexp.Compile(re); err != nil {
			return sgverify.CertificateIdentity{}, fmt.Errorf("%q: %w", re, err)
		}
	}
	return sgverify.NewShortCertificateIdentity("", anchored(id.Issuer), "", anchored(id.Subject))
}

// anchored makes re match a whole value.
func anchored(re string) string {
	return "^(?:" + re + ")$"
}
