package verify

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"sort"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	_ "github.com/notaryproject/notation-core-go/signature/cose" // the envelope formats notation signs with
	_ "github.com/notaryproject/notation-core-go/signature/jws"
	"github.com/notaryproject/notation-go"
	"github.com/notaryproject/notation-go/verifier"
	"github.com/notaryproject/notation-go/verifier/trustpolicy"
	"github.com/notaryproject/notation-go/verifier/truststore"
)

const notationStore = "gitsync"

// certificates is a trust store of the CA certificates of a verification Secret.
type certificates []*x509.Certificate

func (c certificates) GetCertificates(_ context.Context, storeType truststore.Type, namedStore string) ([]*x509.Certificate, error) {
	if storeType != truststore.TypeCA || namedStore != notationStore {
		return nil, fmt.Errorf("no trust store %s:%s", storeType, namedStore)
	}
	return c, nil
}

// parseCertificates reads every PEM certificate of data.
func parseCertificates(data map[string][]byte) (certificates, error) {
	names := make([]string, 0, len(data))
	for n := range data {
		names = append(names, n)
	}
	sort.Strings(names)
	var certs certificates
	for _, n := range names {
		rest := data[n]
		for {
			var block *pem.Block
			block, rest = pem.Decode(rest)
			if block == nil {
				break
			}
			if block.Type != "CERTIFICATE" {
				continue
			}
			c, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("reading certificate in %q: %w", n, err)
			}
			certs = append(certs, c)
		}
	}
	if len(certs) == 0 {
		return nil, errors.New("no PEM certificate found")
	}
	return certs, nil
}

// notationVerify verifies the notation signatures of ref against the Secret's
// certificates (the roots of a "ca" trust store; any identity they certify is trusted).
// The policy is notation's strict level with revocation skipped: the OCSP and CRL
// addresses are in the signer's certificates, and gitsync dials no address a tenant
// chose for it.
func notationVerify(ctx context.Context, ref name.Digest, data map[string][]byte, opts ...remote.Option) (Signer, error) {
	certs, err := parseCertificates(data)
	if err != nil {
		return Signer{}, err
	}
	policy := &trustpolicy.Document{
		Version: "1.0",
		TrustPolicies: []trustpolicy.TrustPolicy{{
			Name:           "gitsync",
			RegistryScopes: []string{"*"},
			SignatureVerification: trustpolicy.SignatureVerification{
				VerificationLevel: trustpolicy.LevelStrict.Name,
				Override:          map[trustpolicy.ValidationType]trustpolicy.ValidationAction{trustpolicy.TypeRevocation: trustpolicy.ActionSkip},
			},
			TrustStores:       []string{string(truststore.TypeCA) + ":" + notationStore},
			TrustedIdentities: []string{"*"},
		}},
	}
	v, err := verifier.New(policy, certs, nil)
	if err != nil {
		return Signer{}, fmt.Errorf("notation verifier: %w", err)
	}
	repo := ggcrRepository{repo: ref.Context(), opts: opts}
	_, outcomes, err := notation.Verify(ctx, v, repo, notation.VerifyOptions{ArtifactReference: ref.String(), MaxSignatureAttempts: MaxSignatures})
	if err != nil {
		return Signer{}, fmt.Errorf("%w: %s: %w", ErrUnverified, ref, err)
	}
	for _, o := range outcomes {
		if o.Error != nil || o.EnvelopeContent == nil || len(o.EnvelopeContent.SignerInfo.CertificateChain) == 0 {
			continue
		}
		leaf := o.EnvelopeContent.SignerInfo.CertificateChain[0]
		sum := sha256.Sum256(leaf.Raw)
		return Signer{Scheme: "notation", Fingerprint: "sha256:" + hex.EncodeToString(sum[:]), Identity: leaf.Subject.String()}, nil
	}
	return Signer{}, fmt.Errorf("%w: %s: no signature verified", ErrUnverified, ref)
}
