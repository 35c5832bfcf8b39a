package verify

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/sigstore-go/pkg/bundle"
)

// BundleArtifactType is the artifact type of the OCI referrer that holds a Sigstore
// bundle (what cosign v3 attaches to what it signs), and the media type of its one layer.
const BundleArtifactType = "application/vnd.dev.sigstore.bundle.v0.3+json"

// signedBundle is a Sigstore bundle read from a referrer, with the referrer's digest to
// name it in errors.
type signedBundle struct {
	digest string
	bundle *bundle.Bundle
}

// sigstoreBundles reads the Sigstore bundles attached to ref as referrers (the referrers
// API, or its tag fallback), at most MaxSignatures, each manifest and bundle at most
// MaxPayloadSize bytes. A referrer that cannot be read as a bundle is skipped with its
// reason; an error is returned only when the registry cannot be read.
func sigstoreBundles(ctx context.Context, ref name.Digest, opts ...remote.Option) ([]signedBundle, []string, error) {
	opts = append(append([]remote.Option{}, opts...), remote.WithContext(ctx))
	idx, err := remote.Referrers(ref, append(opts, remote.WithFilter("artifactType", BundleArtifactType))...)
	if err != nil {
		return nil, nil, fmt.Errorf("listing the referrers of %s: %w", ref, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, nil, fmt.Errorf("listing the referrers of %s: %w", ref, err)
	}
	var out []signedBundle
	var reasons []string
	for _, d := range m.Manifests {
		if d.ArtifactType != BundleArtifactType {
			continue
		}
		if len(out)+len(reasons) >= MaxSignatures {
			break
		}
		b, err := readBundle(ref.Context(), d, opts)
		if err != nil {
			reasons = append(reasons, fmt.Sprintf("bundle %s: %v", d.Digest, err))
			continue
		}
		out = append(out, signedBundle{digest: d.Digest.String(), bundle: b})
	}
	return out, reasons, nil
}

// readBundle reads the bundle of the referrer d: its manifest's one layer of the bundle
// media type (referrerLayer: bounded, digests checked).
func readBundle(repo name.Repository, d v1.Descriptor, opts []remote.Option) (*bundle.Bundle, error) {
	data, _, err := referrerLayer(repo, d, func(layers []v1.Descriptor) (*v1.Descriptor, error) {
		for i := range layers {
			if string(layers[i].MediaType) == BundleArtifactType {
				return &layers[i], nil
			}
		}
		return nil, fmt.Errorf("no layer of media type %s", BundleArtifactType)
	}, opts)
	if err != nil {
		return nil, err
	}
	b := &bundle.Bundle{}
	if err := b.UnmarshalJSON(data); err != nil {
		return nil, fmt.Errorf("reading the bundle: %w", err)
	}
	return b, nil
}
