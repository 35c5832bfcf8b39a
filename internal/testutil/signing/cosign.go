package signing

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// CosignKey is an ECDSA P-256 key pair as `cosign generate-key-pair` makes them.
type CosignKey struct {
	priv *ecdsa.PrivateKey
	// Public is the PEM public key (cosign.pub).
	Public []byte
	// Fingerprint is how verify names it: sha256 of the DER public key.
	Fingerprint string
}

// NewCosignKey generates a cosign key pair.
func NewCosignKey(t testing.TB) CosignKey {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&priv.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(der)
	return CosignKey{priv: priv, Public: pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}),
		Fingerprint: "sha256:" + hex.EncodeToString(sum[:])}
}

// Cosign pushes a signature by key of the manifest digest (normally ref's own) under
// ref's `sha256-<hex>.sig` tag, in the layout `cosign sign --key` writes.
func Cosign(t testing.TB, ref name.Digest, key CosignKey, digest string, opts ...remote.Option) {
	t.Helper()
	payload := fmt.Sprintf(`{"critical":{"identity":{"docker-reference":%q},"image":{"docker-manifest-digest":%q},"type":"cosign container image signature"},"optional":null}`,
		ref.Context().Name(), digest)
	sum := sha256.Sum256([]byte(payload))
	sig, err := key.priv.Sign(rand.Reader, sum[:], crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1), mutate.Addendum{
		Layer:       static.NewLayer([]byte(payload), "application/vnd.dev.cosign.simplesigning.v1+json"),
		Annotations: map[string]string{"dev.cosignproject.cosign/signature": base64.StdEncoding.EncodeToString(sig)},
	})
	if err != nil {
		t.Fatal(err)
	}
	tag := ref.Context().Tag(strings.Replace(ref.DigestStr(), ":", "-", 1) + ".sig")
	if err := remote.Write(tag, img, opts...); err != nil {
		t.Fatalf("signing: pushing the cosign signature of %s: %v", ref, err)
	}
}
