package verify

import (
	"encoding/json"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// referrerLayer reads the manifest d of repo (a signature's or bundle's, as the referrers
// listing names it) and the blob of the layer pick chooses from it: manifest and blob at
// most MaxPayloadSize bytes each, digests checked by go-containerregistry. Notation
// signatures and Sigstore bundles are both read this way.
func referrerLayer(repo name.Repository, d v1.Descriptor, pick func([]v1.Descriptor) (*v1.Descriptor, error), opts []remote.Option) ([]byte, v1.Descriptor, error) {
	if d.Size > MaxPayloadSize {
		return nil, v1.Descriptor{}, fmt.Errorf("manifest %s of %d bytes is over %d", d.Digest, d.Size, MaxPayloadSize)
	}
	got, err := remote.Get(repo.Digest(d.Digest.String()), opts...)
	if err != nil {
		return nil, v1.Descriptor{}, err
	}
	if len(got.Manifest) > MaxPayloadSize {
		return nil, v1.Descriptor{}, fmt.Errorf("manifest %s of %d bytes is over %d", d.Digest, len(got.Manifest), MaxPayloadSize)
	}
	var m v1.Manifest
	if err := json.Unmarshal(got.Manifest, &m); err != nil {
		return nil, v1.Descriptor{}, fmt.Errorf("manifest %s: %w", d.Digest, err)
	}
	layer, err := pick(m.Layers)
	if err != nil {
		return nil, v1.Descriptor{}, fmt.Errorf("manifest %s: %w", d.Digest, err)
	}
	if layer.Size > MaxPayloadSize {
		return nil, v1.Descriptor{}, fmt.Errorf("layer %s of %d bytes is over %d", layer.Digest, layer.Size, MaxPayloadSize)
	}
	l, err := remote.Layer(repo.Digest(layer.Digest.String()), opts...)
	if err != nil {
		return nil, v1.Descriptor{}, err
	}
	blob, err := readLayer(l)
	if err != nil {
		return nil, v1.Descriptor{}, err
	}
	return blob, *layer, nil
}
