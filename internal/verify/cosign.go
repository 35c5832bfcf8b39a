package verify

import (
	"bytes"
	"context"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
)

// Bounds on what is read of an artifact's signatures.
const (
	// MaxSignatures is the most signature layers looked at.
	MaxSignatures = 32
	// MaxPayloadSize is the largest signed payload read (cosign's are under a KiB).
	MaxPayloadSize = 64 << 10
)

const (
	cosignSignatureAnnotation = "dev.cosignproject.cosign/signature"
	cosignPayloadType         = "cosign container image signature"
)

// publicKey is one key of a verification Secret.
type publicKey struct {
	name        string
	verifier    signature.Verifier
	fingerprint string
}

// parsePublicKeys reads every PEM public key of data (one per value).
func parsePublicKeys(data map[string][]byte) ([]publicKey, error) {
	names := make([]string, 0, len(data))
	for n := range data {
		names = append(names, n)
	}
	sort.Strings(names)
	var keys []publicKey
	for _, n := range names {
		if !bytes.Contains(data[n], []byte("-----BEGIN PUBLIC KEY-----")) {
			continue
		}
		pub, err := cryptoutils.UnmarshalPEMToPublicKey(data[n])
		if err != nil {
			return nil, fmt.Errorf("reading public key %q: %w", n, err)
		}
		v, err := signature.LoadVerifier(pub, crypto.SHA256)
		if err != nil {
			return nil, fmt.Errorf("public key %q: %w", n, err)
		}
		der, err := x509.MarshalPKIXPublicKey(pub)
		if err != nil {
			return nil, fmt.Errorf("public key %q: %w", n, err)
		}
		sum := sha256.Sum256(der)
		keys = append(keys, publicKey{name: n, verifier: v, fingerprint: "sha256:" + hex.EncodeToString(sum[:])})
	}
	if len(keys) == 0 {
		return nil, errors.New("no PEM public key found")
	}
	return keys, nil
}

// simpleSigning is the part of cosign's payload that is checked.
type simpleSigning struct {
	Critical struct {
		Image struct {
			DockerManifestDigest string `json:"docker-manifest-digest"`
		} `json:"image"`
		Type string `json:"type"`
	} `json:"critical"`
}

// classicSignature is one layer of cosign's classic signature image: the signed
// simple-signing payload, the signature and the layer's annotations (a keyless
// signature's certificate and Rekor bundle).
type classicSignature struct {
	index       int
	payload     []byte
	sig         []byte
	annotations map[string]string
}

// classicSignatures reads the signatures cosign stored at <repository>:sha256-<hex>.sig,
// at most MaxSignatures layers of at most MaxPayloadSize bytes. A layer that cannot be
// one is skipped with its reason; no such image is ErrUnverified.
func classicSignatures(ctx context.Context, ref name.Digest, opts ...remote.Option) ([]classicSignature, []string, error) {
	sigTag := ref.Context().Tag(strings.Replace(ref.DigestStr(), ":", "-", 1) + ".sig")
	img, err := remote.Image(sigTag, append(opts, remote.WithContext(ctx))...)
	var terr *transport.Error
	if errors.As(err, &terr) && terr.StatusCode == 404 {
		return nil, nil, fmt.Errorf("%w: %s has no cosign signature (%s)", ErrUnverified, ref, sigTag.TagStr())
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading the cosign signatures of %s: %w", ref, err)
	}
	manifest, err := img.Manifest()
	if err != nil {
		return nil, nil, fmt.Errorf("reading the cosign signatures of %s: %w", ref, err)
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, nil, fmt.Errorf("reading the cosign signatures of %s: %w", ref, err)
	}
	var out []classicSignature
	var reasons []string
	for i, desc := range manifest.Layers {
		if i >= MaxSignatures || i >= len(layers) {
			break
		}
		sig, err := base64.StdEncoding.DecodeString(desc.Annotations[cosignSignatureAnnotation])
		if err != nil || len(sig) == 0 {
			reasons = append(reasons, fmt.Sprintf("layer %d: no signature annotation", i))
			continue
		}
		if desc.Size > MaxPayloadSize {
			reasons = append(reasons, fmt.Sprintf("layer %d: payload of %d bytes is over %d", i, desc.Size, MaxPayloadSize))
			continue
		}
		payload, err := readLayer(layers[i])
		if err != nil {
			return nil, nil, fmt.Errorf("reading the cosign signatures of %s: %w", ref, err)
		}
		out = append(out, classicSignature{index: i, payload: payload, sig: sig, annotations: desc.Annotations})
	}
	return out, reasons, nil
}

// namesDigest checks that a simple-signing payload is cosign's and names ref's digest.
func namesDigest(payload []byte, ref name.Digest) error {
	var p simpleSigning
	if err := json.Unmarshal(payload, &p); err != nil {
		return fmt.Errorf("payload: %w", err)
	}
	if p.Critical.Type != cosignPayloadType || p.Critical.Image.DockerManifestDigest != ref.DigestStr() {
		return fmt.Errorf("signed for %s, not this digest", p.Critical.Image.DockerManifestDigest)
	}
	return nil
}

// cosignClassic verifies the signatures cosign stored at <repository>:sha256-<hex>.sig
// with keys. sigstore-go verifies Sigstore bundles; the classic layout carries a bare
// signature over a simple-signing payload, so it is checked with sigstore's signature
// verifiers (the ones sigstore-go itself builds on).
func cosignClassic(ctx context.Context, ref name.Digest, keys []publicKey, opts ...remote.Option) (Signer, error) {
	sigs, reasons, err := classicSignatures(ctx, ref, opts...)
	if err != nil {
		return Signer{}, err
	}
	for _, cs := range sigs {
		for _, k := range keys {
			if k.verifier.VerifySignature(bytes.NewReader(cs.sig), bytes.NewReader(cs.payload)) != nil {
				continue
			}
			if err := namesDigest(cs.payload, ref); err != nil {
				reasons = append(reasons, fmt.Sprintf("layer %d: %s: %v", cs.index, k.name, err))
				continue
			}
			return Signer{Scheme: "cosign", Fingerprint: k.fingerprint, Identity: k.name}, nil
		}
	}
	msg := "no signature by a given key"
	if len(reasons) > 0 {
		msg += " (" + strings.Join(reasons, "; ") + ")"
	}
	return Signer{}, fmt.Errorf("%w: %s: %s", ErrUnverified, ref, msg)
}

// readLayer reads a signature layer's blob (its digest checked by go-containerregistry),
// at most MaxPayloadSize bytes.
func readLayer(l interface{ Compressed() (io.ReadCloser, error) }) ([]byte, error) {
	rc, err := l.Compressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, MaxPayloadSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxPayloadSize {
		return nil, fmt.Errorf("signature payload over %d bytes", MaxPayloadSize)
	}
	return b, nil
}
