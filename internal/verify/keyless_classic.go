package verify

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	sgverify "github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// Annotations of a keyless signature in cosign's classic layout.
const (
	cosignCertificateAnnotation = "dev.sigstore.cosign/certificate"
	cosignRekorBundleAnnotation = "dev.sigstore.cosign/bundle"
	// bundleV01MediaType is the Sigstore bundle version a classic keyless signature is
	// read as: a message signature, the certificate and a Rekor entry with its signed
	// entry timestamp (the inclusion promise; no inclusion proof).
	bundleV01MediaType = "application/vnd.dev.sigstore.bundle+json;version=0.1"
)

// rekorBundle is cosign's `dev.sigstore.cosign/bundle` annotation: the Rekor entry of a
// signature and the log's signed entry timestamp over it.
type rekorBundle struct {
	SignedEntryTimestamp []byte `json:"SignedEntryTimestamp"`
	Payload              struct {
		Body           string `json:"body"`
		IntegratedTime int64  `json:"integratedTime"`
		LogIndex       int64  `json:"logIndex"`
		LogID          string `json:"logID"`
	} `json:"Payload"`
}

// classicKeylessBundle reads a keyless signature of cosign's classic layout (its
// certificate and Rekor bundle annotations) as the Sigstore bundle v0.1 it amounts to,
// so that sigstore-go verifies it as it verifies bundles: the certificate against the
// trusted root, the Rekor entry against the root's log keys, the signature over the
// payload. A signature without a Rekor bundle (signed with the log upload turned off) or
// with a certificate chain of its own is not read: only the root's CAs are trusted.
func classicKeylessBundle(cs classicSignature) (*bundle.Bundle, error) {
	certPEM := cs.annotations[cosignCertificateAnnotation]
	if certPEM == "" {
		return nil, errors.New("no certificate: not a keyless signature")
	}
	certs, err := cryptoutils.UnmarshalCertificatesFromPEM([]byte(certPEM))
	if err != nil || len(certs) == 0 {
		return nil, fmt.Errorf("reading the certificate: %w", errors.Join(err, errors.New("no certificate")))
	}
	var rb rekorBundle
	if raw := cs.annotations[cosignRekorBundleAnnotation]; raw == "" {
		return nil, errors.New("no Rekor bundle (a keyless signature must be in the transparency log)")
	} else if err := json.Unmarshal([]byte(raw), &rb); err != nil {
		return nil, fmt.Errorf("reading the Rekor bundle: %w", err)
	}
	body, err := base64.StdEncoding.DecodeString(rb.Payload.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the Rekor entry: %w", err)
	}
	var kind struct {
		Kind       string `json:"kind"`
		APIVersion string `json:"apiVersion"`
	}
	if err := json.Unmarshal(body, &kind); err != nil {
		return nil, fmt.Errorf("reading the Rekor entry: %w", err)
	}
	logID, err := hex.DecodeString(rb.Payload.LogID)
	if err != nil {
		return nil, fmt.Errorf("reading the Rekor log ID: %w", err)
	}
	digest := sha256.Sum256(cs.payload)
	return bundle.NewBundle(&protobundle.Bundle{
		MediaType: bundleV01MediaType,
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_X509CertificateChain{X509CertificateChain: &protocommon.X509CertificateChain{
				Certificates: []*protocommon.X509Certificate{{RawBytes: certs[0].Raw}}}},
			TlogEntries: []*protorekor.TransparencyLogEntry{{
				LogIndex:          rb.Payload.LogIndex,
				LogId:             &protocommon.LogId{KeyId: logID},
				KindVersion:       &protorekor.KindVersion{Kind: kind.Kind, Version: kind.APIVersion},
				IntegratedTime:    rb.Payload.IntegratedTime,
				InclusionPromise:  &protorekor.InclusionPromise{SignedEntryTimestamp: rb.SignedEntryTimestamp},
				CanonicalizedBody: body,
			}},
		},
		Content: &protobundle.Bundle_MessageSignature{MessageSignature: &protocommon.MessageSignature{
			MessageDigest: &protocommon.HashOutput{Algorithm: protocommon.HashAlgorithm_SHA2_256, Digest: digest[:]},
			Signature:     cs.sig,
		}},
	})
}

// classicKeyless verifies the keyless signatures cosign stored in the classic layout
// (`cosign sign` before v3) with v and the identities' policy options, each read as a
// bundle (classicKeylessBundle) whose payload must name ref's digest.
func classicKeyless(ctx context.Context, ref name.Digest, v *sgverify.Verifier, identities []sgverify.PolicyOption, opts ...remote.Option) (Signer, error) {
	sigs, reasons, err := classicSignatures(ctx, ref, opts...)
	if err != nil {
		return Signer{}, err
	}
	for _, cs := range sigs {
		b, err := classicKeylessBundle(cs)
		if err != nil {
			reasons = append(reasons, fmt.Sprintf("layer %d: %v", cs.index, err))
			continue
		}
		res, err := v.Verify(b, sgverify.NewPolicy(sgverify.WithArtifact(bytes.NewReader(cs.payload)), identities...))
		if err == nil {
			err = namesDigest(cs.payload, ref)
		}
		if err != nil {
			reasons = append(reasons, fmt.Sprintf("layer %d: %v", cs.index, err))
			continue
		}
		return keylessSigner(res), nil
	}
	return Signer{}, fmt.Errorf("%w: %s: no keyless cosign signature verified (%s)", ErrUnverified, ref, strings.Join(reasons, "; "))
}
