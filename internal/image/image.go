// Package image assembles gitsync's container image without Docker and without a base
// image: one layer over an empty image holding the static binary, CA certificates and a
// passwd/group entry for the non-root user, with every timestamp fixed so that the same
// inputs give the same digest, byte for byte.
package image

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// UID and GID of the user the image runs as (distroless' "nonroot").
	UID = 65532
	// BinaryPath is where the operator binary lies in the image.
	BinaryPath = "/gitsync"
	// CACertsPath is where the CA bundle lies in the image (Go's crypto/x509 reads it).
	CACertsPath = "/etc/ssl/certs/ca-certificates.crt"
	// Source is the repository the image is built from (an OCI label).
	Source = "https://github.com/gitsync-dev/gitsync"
)

// Options of one platform's image.
type Options struct {
	// Binary is the operator built for Platform (static: CGO_ENABLED=0).
	Binary []byte
	// CACerts is the PEM bundle installed at CACertsPath.
	CACerts []byte
	// Platform is the image's OS and architecture.
	Platform v1.Platform
	// Created is the creation time of the image and of every file in it (SOURCE_DATE_EPOCH;
	// the zero time is the Unix epoch).
	Created time.Time
	// Version is the operator's version, e.g. v0.1.0 (a label).
	Version string
}

// file is one entry of the layer.
type file struct {
	name string
	mode int64
	data []byte
	dir  bool
}

// Build assembles the image of one platform.
func Build(o Options) (v1.Image, error) {
	if len(o.Binary) == 0 {
		return nil, fmt.Errorf("no binary")
	}
	if len(o.CACerts) == 0 {
		return nil, fmt.Errorf("no CA certificates")
	}
	created := o.Created
	if created.IsZero() {
		created = time.Unix(0, 0)
	}
	created = created.UTC()
	id := strconv.Itoa(UID)
	files := []file{
		{name: "etc/", dir: true, mode: 0o755},
		{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnonroot:x:" + id + ":\n")},
		{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\n" +
			"nonroot:x:" + id + ":" + id + ":nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "etc/ssl/", dir: true, mode: 0o755},
		{name: "etc/ssl/certs/", dir: true, mode: 0o755},
		{name: CACertsPath[1:], mode: 0o644, data: o.CACerts},
		{name: BinaryPath[1:], mode: 0o755, data: o.Binary},
		{name: "home/", dir: true, mode: 0o755},
		{name: "home/nonroot/", dir: true, mode: 0o700},
		{name: "tmp/", dir: true, mode: 0o1777},
	}
	layerTar, err := tarFiles(files, created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("making the layer: %w", err)
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   v1.Time{Time: created},
			CreatedBy: "gitsync hack/image: " + BinaryPath + ", CA certificates, passwd",
			Comment:   "no base image",
		},
	})
	if err != nil {
		return nil, fmt.Errorf("appending the layer: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Created = v1.Time{Time: created}
	cfg.OS, cfg.Architecture, cfg.Variant = o.Platform.OS, o.Platform.Architecture, o.Platform.Variant
	cfg.Config = v1.Config{
		User:       id + ":" + id,
		Entrypoint: []string{BinaryPath, "run"},
		WorkingDir: "/",
		Env:        []string{"PATH=/", "SSL_CERT_FILE=" + CACertsPath, "HOME=/home/nonroot"},
		Labels: map[string]string{
			"org.opencontainers.image.source":  Source,
			"org.opencontainers.image.version": o.Version,
			"org.opencontainers.image.title":   "gitsync",
			"org.opencontainers.image.created": created.Format(time.RFC3339),
		},
	}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, fmt.Errorf("setting the config: %w", err)
	}
	return img, nil
}

// tarFiles writes files, sorted by name, owned by root, all at time t.
func tarFiles(files []file, t time.Time) ([]byte, error) {
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, ModTime: t, Format: tar.FormatUSTAR, Uname: "root", Gname: "root"}
		if f.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("writing %s: %w", f.name, err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("writing %s: %w", f.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ReadFile reads a file for Options, naming it in the error.
func ReadFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return data, nil
}
