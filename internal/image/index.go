package image

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Compile builds the Go package pkg of the module in dir as a static, reproducible binary
// for linux/arch: no cgo, no paths of the build machine, no VCS stamp, no symbol table.
// ldflags are added to "-s -w" (e.g. "-X main.version=v1").
func Compile(ctx context.Context, dir, pkg, arch, ldflags string) ([]byte, error) {
	out, err := os.CreateTemp("", "gitsync-image-*")
	if err != nil {
		return nil, err
	}
	_ = out.Close()
	defer os.Remove(out.Name())
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false",
		"-ldflags", strings.TrimSpace("-s -w -buildid= "+ldflags), "-o", out.Name(), pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build %s for linux/%s: %w: %s", pkg, arch, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return os.ReadFile(out.Name())
}

// Index is the multi-platform image index of imgs, in the order given.
func Index(imgs ...v1.Image) (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, img := range imgs {
		cfg, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add: img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{
				OS: cfg.OS, Architecture: cfg.Architecture, Variant: cfg.Variant,
			}},
		})
	}
	return idx, nil
}

// WriteLayout replaces dir with an OCI image layout holding idx, named ref
// (org.opencontainers.image.ref.name), e.g. for `crane push` or `skopeo copy oci:dir:ref`.
func WriteLayout(dir string, idx v1.ImageIndex, ref string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("clearing %s: %w", dir, err)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("writing the layout %s: %w", dir, err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": ref,
	})); err != nil {
		return fmt.Errorf("writing the image to %s: %w", dir, err)
	}
	return nil
}

// Push uploads idx to the registry as ref, with the credentials of the Docker config
// (e.g. what `docker login` or a CI's login action wrote).
func Push(ctx context.Context, idx v1.ImageIndex, ref string) error {
	r, err := name.ParseReference(ref)
	if err != nil {
		return fmt.Errorf("parsing %s: %w", ref, err)
	}
	if err := remote.WriteIndex(r, idx, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return fmt.Errorf("pushing %s: %w", ref, err)
	}
	return nil
}

// Size is the number of bytes of idx's blobs: the index, each image's manifest, config
// and layers (what a registry stores and a node pulls for all platforms together).
func Size(idx v1.ImageIndex) (int64, error) {
	raw, err := idx.RawManifest()
	if err != nil {
		return 0, err
	}
	total := int64(len(raw))
	m, err := idx.IndexManifest()
	if err != nil {
		return 0, err
	}
	for _, d := range m.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			return 0, err
		}
		size, err := img.Size()
		if err != nil {
			return 0, err
		}
		total += size
		cfg, err := img.RawConfigFile()
		if err != nil {
			return 0, err
		}
		total += int64(len(cfg))
		layers, err := img.Layers()
		if err != nil {
			return 0, err
		}
		for _, l := range layers {
			n, err := l.Size()
			if err != nil {
				return 0, err
			}
			total += n
		}
	}
	return total, nil
}
