package verify_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/gitsync-dev/gitsync/internal/verify"
)

// cosignKey is an ECDSA P-256 key pair as `cosign generate-key-pair` makes them.
type cosignKey struct {
	priv *ecdsa.PrivateKey
	pub  []byte // PEM
}

func newCosignKey(t *testing.T) cosignKey {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&priv.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return cosignKey{priv: priv, pub: pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})}
}

func (k cosignKey) fingerprint(t *testing.T) string {
	block, _ := pem.Decode(k.pub)
	sum := sha256.Sum256(block.Bytes)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// signCosign pushes a signature of ref by key for digest in cosign's classic layout.
func signCosign(t *testing.T, ref name.Digest, key cosignKey, digest string) {
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
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
}

// pushArtifact pushes a random image to repository on a new in-process registry and
// returns its digest reference.
func pushArtifact(t *testing.T, host, repository string) name.Digest {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(host + "/" + repository + ":v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return tag.Context().Digest(d.String())
}

func TestOCICosign(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	ctx := context.Background()
	key, other := newCosignKey(t), newCosignKey(t)
	keys := map[string][]byte{"cosign.pub": key.pub}

	signed := pushArtifact(t, host, "apps/signed")
	signCosign(t, signed, key, signed.DigestStr())
	s, err := verify.OCI(ctx, signed, verify.ProviderCosign, keys)
	if err != nil {
		t.Fatalf("signed: %v", err)
	}
	if want := (verify.Signer{Scheme: "cosign", Fingerprint: key.fingerprint(t), Identity: "cosign.pub"}); s != want {
		t.Errorf("signer = %+v, want %+v", s, want)
	}

	unsigned := pushArtifact(t, host, "apps/unsigned")
	byOther := pushArtifact(t, host, "apps/other")
	signCosign(t, byOther, other, byOther.DigestStr())
	// A signature of another digest copied under this one's .sig tag.
	replayed := pushArtifact(t, host, "apps/replayed")
	signCosign(t, replayed, key, signed.DigestStr())
	for _, tc := range []struct {
		name string
		ref  name.Digest
		want string
	}{
		{"unsigned", unsigned, "has no cosign signature"},
		{"another key", byOther, "no signature by a given key"},
		{"another digest", replayed, "not this digest"},
	} {
		_, err := verify.OCI(ctx, tc.ref, verify.ProviderCosign, keys)
		if !errors.Is(err, verify.ErrUnverified) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.ref.DigestStr()) {
			t.Errorf("%s: err = %v, want ErrUnverified naming the digest and saying %q", tc.name, err, tc.want)
		}
	}
	if _, err := verify.OCI(ctx, signed, verify.ProviderNotation, map[string][]byte{"cosign.pub": key.pub}); err == nil {
		t.Error("notation with a cosign key: want an error")
	}
	if _, err := verify.OCI(ctx, signed, verify.ProviderCosign, map[string][]byte{"x": []byte("not a key")}); err == nil {
		t.Error("no public key: want an error")
	}
}
