package verify_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/notaryproject/notation-core-go/signature/jws"
	"github.com/notaryproject/notation-go"
	notationregistry "github.com/notaryproject/notation-go/registry"
	"github.com/notaryproject/notation-go/signer"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/gitsync-dev/gitsync/internal/verify"
)

// notationCA is a root CA and a code-signing leaf it issued, as notation requires them.
type notationCA struct {
	rootPEM []byte
	leaf    *x509.Certificate
	root    *x509.Certificate
	key     *ecdsa.PrivateKey
}

func newNotationCA(t *testing.T, cn string) notationCA {
	t.Helper()
	rootKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	rootTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn + " root", Organization: []string{"gitsync"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	rootDER, err := x509.CreateCertificate(rand.Reader, rootTmpl, rootTmpl, &rootKey.PublicKey, rootKey)
	if err != nil {
		t.Fatal(err)
	}
	root, _ := x509.ParseCertificate(rootDER)
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: cn, Organization: []string{"gitsync"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(12 * time.Hour), BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, root, &leafKey.PublicKey, rootKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(leafDER)
	return notationCA{rootPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rootDER}), leaf: leaf, root: root, key: leafKey}
}

// signNotation signs ref with notation-go itself (oras-go's client) as `notation sign` does.
func signNotation(t *testing.T, ref name.Digest, ca notationCA) {
	t.Helper()
	s, err := signer.New(ca.key, []*x509.Certificate{ca.leaf, ca.root})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := remote.NewRepository(ref.String())
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	_, err = notation.Sign(context.Background(), s, notationregistry.NewRepository(repo), notation.SignOptions{
		SignerSignOptions: notation.SignerSignOptions{SignatureMediaType: jws.MediaTypeEnvelope},
		ArtifactReference: ref.String(),
	})
	if err != nil {
		t.Fatalf("notation sign: %v", err)
	}
}

func TestOCINotation(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	ctx := context.Background()
	ca, other := newNotationCA(t, "release"), newNotationCA(t, "mallory")
	keys := map[string][]byte{"ca.crt": ca.rootPEM}

	signed := pushArtifact(t, host, "apps/signed")
	signNotation(t, signed, ca)
	s, err := verify.OCI(ctx, signed, verify.OCICheck{Provider: verify.ProviderNotation, Keys: keys})
	if err != nil {
		t.Fatalf("signed: %v", err)
	}
	sum := sha256.Sum256(ca.leaf.Raw)
	if s.Scheme != "notation" || s.Fingerprint != "sha256:"+hex.EncodeToString(sum[:]) || !strings.Contains(s.Identity, "CN=release") {
		t.Errorf("signer = %+v", s)
	}

	unsigned := pushArtifact(t, host, "apps/unsigned")
	byOther := pushArtifact(t, host, "apps/other")
	signNotation(t, byOther, other)
	for name, ref := range map[string]name.Digest{"unsigned": unsigned, "another CA": byOther} {
		if _, err := verify.OCI(ctx, ref, verify.OCICheck{Provider: verify.ProviderNotation, Keys: keys}); !errors.Is(err, verify.ErrUnverified) || !strings.Contains(err.Error(), ref.DigestStr()) {
			t.Errorf("%s: err = %v, want ErrUnverified naming the digest", name, err)
		}
	}
	if _, err := verify.OCI(ctx, signed, verify.OCICheck{Provider: verify.ProviderNotation, Keys: map[string][]byte{"x": []byte("no certificate")}}); err == nil {
		t.Error("no certificate: want an error")
	}
}
