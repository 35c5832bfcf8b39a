package oci

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/egress"
	"github.com/gitsync-dev/gitsync/internal/limits"
)

// Defaults of a pull.
const (
	// DefaultMaxSize bounds a layer (compressed) and what unpacking it writes, when
	// Request.MaxSize is 0.
	DefaultMaxSize = 500 << 20
	// DefaultMaxFiles bounds the entries of a layer (as a Git checkout's tree entries).
	DefaultMaxFiles = 100_000
	// maxDepth bounds the path depth of an entry.
	maxDepth = 64
	// artifactsDir is below the storage path.
	artifactsDir = "oci"
)

// Options configure a Client; the zero value is the CLI's (no egress guard).
type Options struct {
	// Egress guards every address the registry's URLs dial, redirects included.
	Egress *egress.Guard
}

// Client pulls artifacts into <storage>/oci, one directory per identity and digest.
type Client struct {
	dir  string
	opts Options
	mu   sync.Mutex // serialises the publication of a directory
}

// New returns a Client that keeps its artifacts under <storagePath>/oci ("" for a Client
// that only pushes).
func New(storagePath string, opts Options) (*Client, error) {
	c := &Client{opts: opts}
	if storagePath == "" {
		return c, nil
	}
	abs, err := filepath.Abs(filepath.Join(storagePath, artifactsDir))
	if err != nil {
		return nil, fmt.Errorf("resolving storage path %q: %w", storagePath, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("creating the artifact directory: %w", err)
	}
	c.dir = abs
	return c, nil
}

// Request is one poll of an OCIRepository.
type Request struct {
	// URL is oci://host/path; Ref selects the artifact.
	URL      string
	Ref      Ref
	Insecure bool
	// Auth is the registry's credentials (nil: anonymous).
	Auth    authn.Authenticator
	Timeout time.Duration
	// MediaType and Operation select the layer (gitsyncv1's defaults when empty).
	MediaType, Operation string
	// MaxSize bounds the layer and what unpacking it writes (DefaultMaxSize when 0).
	MaxSize int64
	// Key is the identity the artifact is stored under (the URL and the credentials'
	// Secret): another identity's pull of the same digest is never served from it.
	Key string
	// Current is the digest of the artifact in status: when the registry's manifest has
	// it and its directory is in storage, nothing is downloaded.
	Current string
	// Verify, when set, checks the signature of the manifest's digest (with the pull's
	// credentials, transport and egress guard) before anything of it is downloaded, and
	// returns the signer; a failure wraps ErrVerification and nothing is stored.
	Verify func(ctx context.Context, ref name.Digest, opts []remote.Option) (string, error)
	// Verified says the signer of Current is recorded for this spec: an unchanged digest
	// is not verified again.
	Verified bool
}

// Artifact is what a pull found.
type Artifact struct {
	// Revision is `<tag>@sha256:<hex>` (`sha256:<hex>` for a digest ref).
	Revision string
	// Digest is the manifest's digest, URL the reference pulled.
	Digest, URL string
	// Metadata holds the manifest's source and revision annotations (nil when nothing
	// was downloaded).
	Metadata map[string]string
	// Dir is the unpacked content; Fetched says whether this pull downloaded it.
	Dir     string
	Fetched bool
	// Signer is what Request.Verify returned ("" when it did not run).
	Signer string
}

// Pull resolves req.Ref, HEADs the manifest, and when its digest is not req.Current (or
// its directory is gone) downloads the manifest and the selected layer and unpacks it.
// A failure leaves the stored artifacts as they were.
func (c *Client) Pull(ctx context.Context, req Request) (*Artifact, error) {
	if c.dir == "" {
		return nil, errors.New("the client has no storage")
	}
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	repo, err := Repository(req.URL, req.Insecure)
	if err != nil {
		return nil, err
	}
	opts := c.remoteOptions(ctx, req.Auth)
	ref, tag, err := resolve(ctx, repo, req.Ref, opts)
	if err != nil {
		return nil, err
	}
	digest, err := headDigest(ref, opts)
	if err != nil {
		return nil, err
	}
	art := &Artifact{Digest: digest, Revision: digest, URL: ref.String()}
	if tag != "" {
		art.Revision = tag + "@" + digest
	}
	art.Dir = c.ArtifactDir(req.Key, digest, req.MediaType, req.Operation)
	unchanged := false
	if digest == req.Current {
		_, err := os.Stat(art.Dir)
		unchanged = err == nil
	}
	if req.Verify != nil && !(unchanged && req.Verified) {
		signer, err := req.Verify(ctx, repo.Digest(digest), opts)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrVerification, art.Revision, err)
		}
		art.Signer = signer
	}
	if unchanged {
		return art, nil // Metadata: the caller's, unchanged
	}
	// Pulled by digest: go-containerregistry checks that the manifest has that digest.
	img, err := remote.Image(repo.Digest(digest), opts...)
	if err != nil {
		return nil, registryError("reading the manifest of "+ref.String(), err)
	}
	manifest, err := img.Manifest()
	if err != nil {
		return nil, registryError("reading the manifest of "+ref.String(), err)
	}
	art.Metadata = metadataOf(manifest.Annotations)
	if err := c.unpack(img, manifest, req, art, path.Base(repo.RepositoryStr())+".tgz"); err != nil {
		return nil, err
	}
	art.Fetched = true
	return art, nil
}

// headDigest asks the registry for the digest of ref's manifest with a HEAD; a registry
// that does not answer HEAD (other than with a refusal of the credentials) is asked with
// a GET of the manifest (bounded, see limits.RegistryAnswers).
func headDigest(ref name.Reference, opts []remote.Option) (string, error) {
	desc, err := remote.Head(ref, opts...)
	if err == nil {
		return desc.Digest.String(), nil
	}
	if err := registryError("reading the manifest of "+ref.String(), err); errors.Is(err, ErrUnauthorized) {
		return "", err
	}
	got, err := remote.Get(ref, opts...)
	if err != nil {
		return "", registryError("reading the manifest of "+ref.String(), err)
	}
	return got.Digest.String(), nil
}

// remoteOptions dial through the egress guard and cap the registry's answers.
func (c *Client) remoteOptions(ctx context.Context, auth authn.Authenticator) []remote.Option {
	var base http.RoundTripper = http.DefaultTransport
	if c.opts.Egress != nil {
		base = c.opts.Egress.Transport()
	}
	if auth == nil {
		auth = authn.Anonymous
	}
	return []remote.Option{remote.WithContext(ctx), remote.WithTransport(limits.RegistryAnswers{Next: base, Answer: maxManifestBytes, TagPage: maxTagPageBytes, TooLarge: ErrTooLarge}), remote.WithAuth(auth)}
}

// ArtifactDir is where the artifact of digest pulled under key (with that layer
// selection) is stored; it may not exist.
func (c *Client) ArtifactDir(key, digest, mediaType, operation string) string {
	if mediaType == "" {
		mediaType = gitsyncv1.FluxContentMediaType
	}
	if operation == "" {
		operation = gitsyncv1.OCILayerExtract
	}
	sum := sha256.Sum256([]byte(key + "\x00" + digest + "\x00" + mediaType + "\x00" + operation))
	return filepath.Join(c.dir, hex.EncodeToString(sum[:16]))
}

// unpack downloads the selected layer (bounded) and unpacks (or copies) it into a new
// directory, then publishes it as art.Dir.
func (c *Client) unpack(img v1.Image, manifest *v1.Manifest, req Request, art *Artifact, copyName string) error {
	mediaType, op := req.MediaType, req.Operation
	if mediaType == "" {
		mediaType = gitsyncv1.FluxContentMediaType
	}
	maxSize := req.MaxSize
	if maxSize <= 0 {
		maxSize = DefaultMaxSize
	}
	var layerDesc *v1.Descriptor
	for i := range manifest.Layers {
		if string(manifest.Layers[i].MediaType) == mediaType {
			layerDesc = &manifest.Layers[i]
			break
		}
	}
	if layerDesc == nil {
		return fmt.Errorf("%w: %s has no layer of media type %s", ErrLayerInvalid, art.URL, mediaType)
	}
	if layerDesc.Size > maxSize {
		return fmt.Errorf("the layer of %s is %d bytes, over the limit of %d: %w", art.URL, layerDesc.Size, maxSize, ErrTooLarge)
	}
	layer, err := img.LayerByDigest(layerDesc.Digest)
	if err != nil {
		return registryError("reading the layer of "+art.URL, err)
	}
	rc, err := layer.Compressed() // checks the digest at EOF
	if err != nil {
		return registryError("reading the layer of "+art.URL, err)
	}
	defer rc.Close()
	body := limits.CapReader(rc, layerDesc.Size, "the layer of "+art.URL, ErrTooLarge)
	tmp, err := os.MkdirTemp(c.dir, ".tmp-")
	if err != nil {
		return fmt.Errorf("storing %s: %w", art.URL, err)
	}
	defer os.RemoveAll(tmp)
	if op == gitsyncv1.OCILayerCopy {
		err = copyLayer(body, filepath.Join(tmp, copyName))
	} else {
		err = Extract(body, tmp, Limits{MaxBytes: maxSize, MaxFiles: DefaultMaxFiles})
	}
	if err != nil {
		return fmt.Errorf("unpacking the layer of %s: %w", art.URL, err)
	}
	return c.publish(tmp, art.Dir)
}

// publish moves tmp to dir. A dir already there holds the same content (its name is the
// digest's) and may be read by a render: it stays.
func (c *Client) publish(tmp, dir string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("publishing %s: %w", dir, err)
	}
	return nil
}

func copyLayer(r io.Reader, file string) error {
	f, err := os.OpenFile(file, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	return errors.Join(err, f.Close())
}
