package verify

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	notationregistry "github.com/notaryproject/notation-go/registry"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// notationArtifactType is the artifact type of a notation signature manifest.
const notationArtifactType = "application/vnd.cncf.notary.signature"

// ggcrRepository is notation-go's registry.Repository over go-containerregistry, so that
// notation reads through the same credentials, transport and egress guard as the pull
// (notation-go's own is oras-go's client). Read only; every read is bounded.
type ggcrRepository struct {
	repo name.Repository
	opts []remote.Option
}

var _ notationregistry.Repository = ggcrRepository{}

func (r ggcrRepository) options(ctx context.Context) []remote.Option {
	return append(append([]remote.Option{}, r.opts...), remote.WithContext(ctx))
}

// Resolve returns the descriptor of reference (a digest in this repository, or a digest
// reference).
func (r ggcrRepository) Resolve(ctx context.Context, reference string) (ocispec.Descriptor, error) {
	if !strings.Contains(reference, "@") {
		reference = r.repo.Name() + "@" + reference
	}
	ref, err := name.NewDigest(reference)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("%s is not a digest reference: %w", reference, err)
	}
	d, err := remote.Head(ref, r.options(ctx)...)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	return ocispec.Descriptor{MediaType: string(d.MediaType), Digest: digest.Digest(d.Digest.String()), Size: d.Size}, nil
}

// ListSignatures lists the notation signature manifests that refer to desc (the
// referrers API, or its tag fallback), at most MaxSignatures.
func (r ggcrRepository) ListSignatures(ctx context.Context, desc ocispec.Descriptor, fn func([]ocispec.Descriptor) error) error {
	idx, err := remote.Referrers(r.repo.Digest(desc.Digest.String()), append(r.options(ctx), remote.WithFilter("artifactType", notationArtifactType))...)
	if err != nil {
		return err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	var out []ocispec.Descriptor
	for _, d := range m.Manifests {
		if d.ArtifactType != notationArtifactType || len(out) >= MaxSignatures {
			continue
		}
		out = append(out, ocispec.Descriptor{MediaType: string(d.MediaType), Digest: digest.Digest(d.Digest.String()), Size: d.Size,
			ArtifactType: d.ArtifactType, Annotations: d.Annotations})
	}
	return fn(out)
}

// FetchSignatureBlob returns the signature envelope of the signature manifest desc: its
// one layer (referrerLayer: bounded, digests checked).
func (r ggcrRepository) FetchSignatureBlob(ctx context.Context, desc ocispec.Descriptor) ([]byte, ocispec.Descriptor, error) {
	h, err := v1.NewHash(desc.Digest.String())
	if err != nil {
		return nil, ocispec.Descriptor{}, fmt.Errorf("signature manifest %s: %w", desc.Digest, err)
	}
	blob, l, err := referrerLayer(r.repo, v1.Descriptor{Digest: h, Size: desc.Size}, func(layers []v1.Descriptor) (*v1.Descriptor, error) {
		if len(layers) != 1 {
			return nil, fmt.Errorf("%d layers, not 1", len(layers))
		}
		return &layers[0], nil
	}, r.options(ctx))
	if err != nil {
		return nil, ocispec.Descriptor{}, err
	}
	return blob, ocispec.Descriptor{MediaType: string(l.MediaType), Digest: digest.Digest(l.Digest.String()), Size: l.Size}, nil
}

// PushSignature is refused: verification only reads.
func (r ggcrRepository) PushSignature(context.Context, string, []byte, ocispec.Descriptor, map[string]string) (ocispec.Descriptor, ocispec.Descriptor, error) {
	return ocispec.Descriptor{}, ocispec.Descriptor{}, errors.New("verification does not push signatures")
}
