package verify

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Providers of OCI signatures.
const (
	ProviderCosign   = "cosign"
	ProviderNotation = "notation"
)

// TrustedRootKey is the key of a verification Secret that holds a Sigstore trusted root
// (TrustedRoot JSON: Fulcio CA chains, Rekor and CT log keys, timestamp authorities). With
// it, provider cosign verifies keyless signatures; without it, signatures by key pairs.
const TrustedRootKey = "trusted_root.json"

// Identity is an OIDC identity a keyless signature may carry: regular expressions (RE2,
// matched against the whole value) of the certificate's OIDC issuer and its subject (the
// subject alternative name: an e-mail address or a URI, such as a CI workflow's).
type Identity struct {
	Issuer, Subject string
}

// OCICheck is how OCI verifies an artifact: the provider, the data of the verification
// Secret (key name → bytes) and, for cosign keyless, the identities of which at least one
// must match the signing certificate.
type OCICheck struct {
	Provider   string
	Keys       map[string][]byte
	Identities []Identity
}

// OCI verifies the signatures of the OCI artifact ref (pinned by digest) as check says,
// reading the signatures from ref's registry with opts (the caller's credentials,
// transport and egress guard). It returns the signer of the first signature that
// verifies.
//
//   - cosign with PEM public keys (`cosign.pub`, ECDSA, RSA or Ed25519): the signatures
//     cosign writes with a key pair, in the classic layout (`cosign sign --key`: the image
//     `<repository>:sha256-<hex>.sig`, one simple-signing payload per layer, whose
//     docker-manifest-digest must be ref's) or as Sigstore bundles (cosign v3, `cosign
//     sign --new-bundle-format`: see below), signed by one of the keys. Transparency log
//     entries in them are not checked (the Secret gives no log key).
//   - cosign with trusted_root.json (keyless): Sigstore bundles, and classic-layout
//     signatures read as the bundle they amount to (their certificate and Rekor bundle
//     annotations; one without a Rekor bundle is refused), whose certificate
//     chains to a Fulcio CA of the root, at a time a log entry or a timestamp authority
//     of the root vouches for, with a verified entry in one of the root's Rekor logs
//     when it has any and an SCT of its CT logs when it has any, and whose OIDC issuer
//     and subject match one of check.Identities (required). Nothing is fetched from the
//     public Sigstore instance or any other address: the root is only what the Secret
//     holds.
//   - notation: the signatures notation attaches as referrers (JWS or COSE envelopes);
//     keys are PEM CA certificates (a "ca" trust store; any identity they certify is
//     trusted), notation's strict level without revocation checks (no OCSP or CRL address
//     from a signer's certificate is dialled).
//
// A Sigstore bundle is an OCI 1.1 referrer of ref of artifact type
// application/vnd.dev.sigstore.bundle.v0.3+json (found through the referrers API or its
// tag fallback `sha256-<hex>`); it must sign ref's manifest digest: a DSSE envelope with
// an in-toto statement of predicate type https://sigstore.dev/cosign/sign/v1 whose
// subject has that digest (what cosign v3 signs; attestations of other predicate types
// are not signatures), or a message signature over the manifest.
//
// Everything read from the registry is bounded (MaxSignatures signatures of at most
// MaxPayloadSize bytes each).
func OCI(ctx context.Context, ref name.Digest, check OCICheck, opts ...remote.Option) (Signer, error) {
	switch check.Provider {
	case ProviderCosign, "":
		if _, ok := check.Keys[TrustedRootKey]; ok {
			return cosignKeyless(ctx, ref, check.Keys[TrustedRootKey], check.Identities, opts...)
		}
		if len(check.Identities) > 0 {
			return Signer{}, fmt.Errorf("matchOIDCIdentity is for keyless signatures: the secret has no %s", TrustedRootKey)
		}
		return cosignKeyPair(ctx, ref, check.Keys, opts...)
	case ProviderNotation:
		if len(check.Identities) > 0 {
			return Signer{}, fmt.Errorf("matchOIDCIdentity is for cosign keyless signatures, not notation")
		}
		return notationVerify(ctx, ref, check.Keys, opts...)
	default:
		return Signer{}, fmt.Errorf("unknown signature provider %q (cosign or notation)", check.Provider)
	}
}
