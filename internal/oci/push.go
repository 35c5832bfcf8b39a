package oci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// FluxConfigMediaType is the config media type of an artifact `flux push artifact` writes.
const FluxConfigMediaType = "application/vnd.cncf.flux.config.v1+json"

// createdAnnotation is the manifest annotation of when the artifact was made.
const createdAnnotation = "org.opencontainers.image.created"

// PushRequest is an artifact to push.
type PushRequest struct {
	// URL is oci://host/path:tag.
	URL string
	// Dir is the directory packed; Source and Revision are its origin (annotations).
	Dir, Source, Revision string
	Insecure              bool
	// Auth is the registry's credentials; nil: the docker config's (~/.docker/config.json,
	// as `docker login` writes it), else anonymous.
	Auth authn.Authenticator
	// Created is the manifest's creation time (now when zero).
	Created time.Time
}

// Push packs req.Dir as Flux's layout (one tar+gzip layer of media type
// application/vnd.cncf.flux.content.v1.tar+gzip, the source and revision annotations)
// and pushes it with its tag. It returns the reference pushed with the manifest's digest.
func (c *Client) Push(ctx context.Context, req PushRequest) (string, error) {
	rest, ok := strings.CutPrefix(req.URL, "oci://")
	if !ok {
		return "", fmt.Errorf("%w: %q is not oci://host/path:tag", ErrURLInvalid, req.URL)
	}
	var nopts []name.Option
	if req.Insecure {
		nopts = append(nopts, name.Insecure)
	}
	tag, err := name.NewTag(rest, append(nopts, name.StrictValidation)...)
	if err != nil {
		return "", fmt.Errorf("%w: %q: %v (oci://host/path:tag)", ErrURLInvalid, req.URL, err)
	}
	content, err := Pack(req.Dir)
	if err != nil {
		return "", err
	}
	created := req.Created
	if created.IsZero() {
		created = time.Now()
	}
	img, err := mutate.AppendLayers(empty.Image, static.NewLayer(content, gitsyncv1.FluxContentMediaType))
	if err != nil {
		return "", err
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, FluxConfigMediaType)
	annotations := map[string]string{createdAnnotation: created.UTC().Format(time.RFC3339)}
	if req.Source != "" {
		annotations[gitsyncv1.OCISourceAnnotation] = req.Source
	}
	if req.Revision != "" {
		annotations[gitsyncv1.OCIRevisionAnnotation] = req.Revision
	}
	img = mutate.Annotations(img, annotations).(v1.Image)
	auth := req.Auth
	if auth == nil {
		if auth, err = authn.DefaultKeychain.Resolve(tag.Context()); err != nil {
			return "", fmt.Errorf("reading the docker config's credentials: %w", err)
		}
	}
	opts := c.remoteOptions(ctx, auth)
	if err := remote.Write(tag, img, opts...); err != nil {
		return "", registryError("pushing "+tag.String(), err)
	}
	digest, err := img.Digest()
	if err != nil {
		return "", err
	}
	return tag.String() + "@" + digest.String(), nil
}

// Pack writes dir's regular files and directories as a gzipped tarball, in a stable
// order with zeroed times and owners, so that the same content packs to the same digest.
// A .git directory is left out; so are symbolic links and other special files (as
// `flux push artifact` does).
func Pack(dir string) ([]byte, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("packing %s: %w", dir, err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("packing %s: not a directory", dir)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir() && d.Name() == ".git":
			return filepath.SkipDir
		case d.IsDir():
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: rel + "/", Mode: 0o755, Format: tar.FormatPAX})
		case !d.Type().IsRegular():
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		mode := int64(0o644)
		if fi.Mode()&0o111 != 0 {
			mode = 0o755
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: rel, Mode: mode, Size: fi.Size(), Format: tar.FormatPAX}); err != nil {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.CopyN(tw, f, fi.Size())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("packing %s: %w", dir, err)
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
