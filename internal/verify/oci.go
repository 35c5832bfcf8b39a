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

// OCI verifies the signatures of the OCI artifact ref (pinned by digest) as provider
// says, with the keys of a verification Secret's data, reading the signatures from ref's
// registry with opts (the caller's credentials, transport and egress guard). It returns
// the signer of the first signature that verifies.
//
//   - cosign: the signatures cosign writes with a key pair (`cosign sign --key`,
//     classic layout: the image `<repository>:sha256-<hex>.sig`, one simple-signing
//     payload per layer); keys are PEM public keys (`cosign.pub`, ECDSA, RSA or
//     Ed25519). The payload must name ref's digest.
//   - notation: the signatures notation attaches as referrers (JWS or COSE envelopes);
//     keys are PEM CA certificates (a "ca" trust store; any identity they certify is
//     trusted), notation's strict level without revocation checks (no OCSP or CRL address
//     from a signer's certificate is dialled).
//
// Everything read from the registry is bounded (MaxSignatures layers of at most
// MaxPayloadSize bytes each).
func OCI(ctx context.Context, ref name.Digest, provider string, keys map[string][]byte, opts ...remote.Option) (Signer, error) {
	switch provider {
	case ProviderCosign, "":
		return cosignClassic(ctx, ref, keys, opts...)
	case ProviderNotation:
		return notationVerify(ctx, ref, keys, opts...)
	default:
		return Signer{}, fmt.Errorf("unknown signature provider %q (cosign or notation)", provider)
	}
}
