package imagescan

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gitsync-dev/gitsync/internal/egress"
	"github.com/gitsync-dev/gitsync/internal/limits"
)

// Bounds of a scan.
const (
	// DefaultPageSize tags are asked for per page of the tag list.
	DefaultPageSize = 1000
	// DefaultMaxTags is the most tags a repository may list.
	DefaultMaxTags = 100_000
	// MaxTagLength is the OCI distribution spec's longest tag.
	MaxTagLength = 128
	// MaxPageBytes bounds one answer of the registry (a tag list page, a token, an error).
	MaxPageBytes = 8 << 20
)

// ErrTooLarge: the registry listed more than the scanner accepts.
var ErrTooLarge = errors.New("too large")

// Options configure a Scanner; the zero value has no egress guard and the default bounds.
type Options struct {
	// Egress guards every address the scanner dials.
	Egress *egress.Guard
	// PageSize and MaxTags: zero is the default.
	PageSize, MaxTags int
}

// Scanner lists tags.
type Scanner struct {
	opts Options
}

// New returns a Scanner.
func New(opts Options) *Scanner {
	if opts.PageSize <= 0 {
		opts.PageSize = DefaultPageSize
	}
	if opts.MaxTags <= 0 {
		opts.MaxTags = DefaultMaxTags
	}
	return &Scanner{opts: opts}
}

// Request is one ImageRepository's scan.
type Request struct {
	// Image is the repository, e.g. ghcr.io/org/app.
	Image string
	// Insecure allows plain HTTP.
	Insecure bool
	// DockerConfigJSON is the .dockerconfigjson of the secretRef (nil: anonymous).
	DockerConfigJSON []byte
	// Exclusions are regular expressions; matching tags are dropped.
	Exclusions []string
	// Timeout bounds the whole scan (0: none beyond ctx's).
	Timeout time.Duration
}

// Result is a scan's outcome.
type Result struct {
	// Canonical is the repository's full name, registry included.
	Canonical string
	// Tags kept, in the registry's order.
	Tags []string
}

// ParseImage parses an image repository name (no tag, no digest).
func ParseImage(image string, insecure bool) (name.Repository, error) {
	var opts []name.Option
	if insecure {
		opts = append(opts, name.Insecure)
	}
	repo, err := name.NewRepository(image, opts...)
	if err != nil {
		return name.Repository{}, fmt.Errorf("image %q: %w", image, err)
	}
	return repo, nil
}

func (s *Scanner) remoteOptions(ctx context.Context, repo name.Repository, r Request) ([]remote.Option, error) {
	auth, err := authFor(r.DockerConfigJSON, repo.Registry)
	if err != nil {
		return nil, err
	}
	var rt http.RoundTripper = s.opts.Egress.Transport()
	return []remote.Option{remote.WithContext(ctx), remote.WithAuth(auth),
		remote.WithTransport(limits.RegistryAnswers{Next: rt, Answer: MaxPageBytes, TagPage: MaxPageBytes, Blobs: true, TooLarge: ErrTooLarge}), remote.WithPageSize(s.opts.PageSize)}, nil
}

// Scan lists the repository's tags page by page, dropping excluded tags; more than
// MaxTags tags, or a tag longer than MaxTagLength, fails the scan (ErrTooLarge).
func (s *Scanner) Scan(ctx context.Context, r Request) (*Result, error) {
	exclusions, err := compileExclusions(r.Exclusions)
	if err != nil {
		return nil, err
	}
	repo, err := ParseImage(r.Image, r.Insecure)
	if err != nil {
		return nil, err
	}
	if r.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.Timeout)
		defer cancel()
	}
	opts, err := s.remoteOptions(ctx, repo, r)
	if err != nil {
		return nil, err
	}
	puller, err := remote.NewPuller(opts...)
	if err != nil {
		return nil, err
	}
	lister, err := puller.Lister(ctx, repo)
	if err != nil {
		return nil, fmt.Errorf("listing the tags of %s: %w", repo, err)
	}
	tags, listed := []string{}, 0
	for lister.HasNext() {
		page, err := lister.Next(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing the tags of %s: %w", repo, err)
		}
		for _, tag := range page.Tags {
			if listed++; listed > s.opts.MaxTags {
				return nil, fmt.Errorf("%s lists more than %d tags: %w", repo, s.opts.MaxTags, ErrTooLarge)
			}
			if len(tag) > MaxTagLength {
				return nil, fmt.Errorf("%s lists a tag longer than %d characters: %w", repo, MaxTagLength, ErrTooLarge)
			}
			if !excluded(tag, exclusions) {
				tags = append(tags, tag)
			}
		}
	}
	return &Result{Canonical: repo.Name(), Tags: tags}, nil
}

// Digest returns the manifest digest of image:tag (a HEAD request; a GET when the
// registry does not answer HEAD with a digest).
func (s *Scanner) Digest(ctx context.Context, r Request, tag string) (string, error) {
	repo, err := ParseImage(r.Image, r.Insecure)
	if err != nil {
		return "", err
	}
	if r.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.Timeout)
		defer cancel()
	}
	opts, err := s.remoteOptions(ctx, repo, r)
	if err != nil {
		return "", err
	}
	ref := repo.Tag(tag)
	desc, err := remote.Head(ref, opts...)
	if err != nil {
		return "", fmt.Errorf("reading the digest of %s: %w", ref, err)
	}
	return desc.Digest.String(), nil
}
