package chartrepo

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// SignatureCheck verifies the signatures of an OCI artifact pinned by digest, reading
// them with opts (internal/verify.OCI with the provider and keys bound).
type SignatureCheck func(ctx context.Context, ref name.Digest, opts ...remote.Option) (signer string, err error)

// VerifyOCI checks that the chart archive at archive (what Fetch returned for cv) is the
// chart layer of the manifest cv's tag names now, and hands that manifest's digest to
// check: the signature is checked for exactly the content that is rendered, whether it
// was downloaded now or earlier. One manifest read (at most MaxManifestBytes) per call,
// within src's timeout, with src's credentials and the egress guard.
func (s *Store) VerifyOCI(ctx context.Context, src Source, cv *ChartVersion, archive string, check SignatureCheck) (string, error) {
	if !IsOCI(src.URL) || len(cv.URLs) == 0 {
		return "", fmt.Errorf("chart %s %s is not in an OCI registry", cv.Name, cv.Version)
	}
	timeout := s.timeoutOf(src)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	opts, err := s.remoteOptions(ctx, src)
	if err != nil {
		return "", err
	}
	ref, err := name.ParseReference(strings.TrimPrefix(cv.URLs[0], "oci://"))
	if err != nil {
		return "", fmt.Errorf("chart reference %s: %w", cv.URLs[0], err)
	}
	desc, err := remote.Get(ref, opts...)
	if err != nil {
		return "", timedOut(ctx, timeout, ociError("reading "+cv.URLs[0], err))
	}
	var m v1.Manifest
	if err := json.Unmarshal(desc.Manifest, &m); err != nil {
		return "", fmt.Errorf("the manifest of %s: %w", cv.URLs[0], err)
	}
	want := strings.TrimSuffix(filepath.Base(archive), ".tgz")
	found := false
	for _, l := range m.Layers {
		if string(l.MediaType) == ChartLayerMediaType && l.Digest.Hex == want {
			found = true
		}
	}
	if !found {
		return "", fmt.Errorf("%s (%s) no longer holds the chart archive sha256:%s that was pulled", cv.URLs[0], desc.Digest, want)
	}
	signer, err := check(ctx, ref.Context().Digest(desc.Digest.String()), opts...)
	return signer, timedOut(ctx, timeout, err)
}
