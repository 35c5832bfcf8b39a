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
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gitsync-dev/gitsync/internal/testutil/signing"
	"github.com/gitsync-dev/gitsync/internal/verify"
)

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
	key, other := signing.NewCosignKey(t), signing.NewCosignKey(t)
	keys := map[string][]byte{"cosign.pub": key.Public}

	signed := pushArtifact(t, host, "apps/signed")
	signing.Cosign(t, signed, key, signed.DigestStr())
	s, err := verify.OCI(ctx, signed, verify.OCICheck{Provider: verify.ProviderCosign, Keys: keys})
	if err != nil {
		t.Fatalf("signed: %v", err)
	}
	if want := (verify.Signer{Scheme: "cosign", Fingerprint: key.Fingerprint, Identity: "cosign.pub"}); s != want {
		t.Errorf("signer = %+v, want %+v", s, want)
	}

	unsigned := pushArtifact(t, host, "apps/unsigned")
	byOther := pushArtifact(t, host, "apps/other")
	signing.Cosign(t, byOther, other, byOther.DigestStr())
	// A signature of another digest copied under this one's .sig tag.
	replayed := pushArtifact(t, host, "apps/replayed")
	signing.Cosign(t, replayed, key, signed.DigestStr())
	for _, tc := range []struct {
		name string
		ref  name.Digest
		want string
	}{
		{"unsigned", unsigned, "has no cosign signature"},
		{"another key", byOther, "no signature by a given key"},
		{"another digest", replayed, "not this digest"},
	} {
		_, err := verify.OCI(ctx, tc.ref, verify.OCICheck{Provider: verify.ProviderCosign, Keys: keys})
		if !errors.Is(err, verify.ErrUnverified) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.ref.DigestStr()) {
			t.Errorf("%s: err = %v, want ErrUnverified naming the digest and saying %q", tc.name, err, tc.want)
		}
	}
	if _, err := verify.OCI(ctx, signed, verify.OCICheck{Provider: verify.ProviderNotation, Keys: map[string][]byte{"cosign.pub": key.Public}}); err == nil {
		t.Error("notation with a cosign key: want an error")
	}
	if _, err := verify.OCI(ctx, signed, verify.OCICheck{Provider: verify.ProviderCosign, Keys: map[string][]byte{"x": []byte("not a key")}}); err == nil {
		t.Error("no public key: want an error")
	}
}
