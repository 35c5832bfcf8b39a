package oci

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Bounds of a tag list: pages of tagPageSize tags, at most maxTagPages of them.
const (
	tagPageSize = 1000
	maxTagPages = 10
)

// Errors a caller tells apart (errors.Is).
var (
	// ErrURLInvalid: the URL is not oci://host/path, or the ref does not parse.
	ErrURLInvalid = errors.New("invalid OCI reference")
	// ErrRefNotFound: no tag in the semver range, or the tag or digest is not there.
	ErrRefNotFound = errors.New("artifact not found")
	// ErrRefInvalid: the semver range does not parse.
	ErrRefInvalid = errors.New("invalid ref")
	// ErrTooLarge: the layer, its content or an answer of the registry is over its bound.
	ErrTooLarge = errors.New("too large")
	// ErrLayerInvalid: no layer of the selected media type, or content that cannot be
	// unpacked safely (a link out, an absolute path, a device file).
	ErrLayerInvalid = errors.New("invalid layer")
	// ErrUnauthorized: the registry refused the credentials (401, 403).
	ErrUnauthorized = errors.New("unauthorized")
	// ErrVerification: Request.Verify refused the artifact's signature.
	ErrVerification = errors.New("signature verification failed")
)

// Ref selects an artifact: Digest wins, then SemVer (the highest tag in the range), then
// Tag ("latest" when all are empty).
type Ref struct {
	Tag, SemVer, Digest string
}

// Repository parses an oci://host/path URL (no tag, no digest); insecure allows plain HTTP.
func Repository(url string, insecure bool) (name.Repository, error) {
	rest, ok := strings.CutPrefix(url, "oci://")
	if !ok || rest == "" || strings.ContainsAny(rest, "@?#") {
		return name.Repository{}, fmt.Errorf("%w: %q is not oci://host/path", ErrURLInvalid, url)
	}
	var opts []name.Option
	if insecure {
		opts = append(opts, name.Insecure)
	}
	repo, err := name.NewRepository(strings.TrimSuffix(rest, "/"), append(opts, name.StrictValidation)...)
	if err != nil {
		return name.Repository{}, fmt.Errorf("%w: %v", ErrURLInvalid, err)
	}
	return repo, nil
}

// resolve turns ref into a tag or digest reference of repo and the tag it names ("" for a
// digest); a semver range lists the tags.
func resolve(ctx context.Context, repo name.Repository, ref Ref, opts []remote.Option) (name.Reference, string, error) {
	switch {
	case ref.Digest != "":
		d, err := name.NewDigest(repo.Name()+"@"+ref.Digest, name.StrictValidation)
		if err != nil {
			return nil, "", fmt.Errorf("%w: digest %q: %v", ErrURLInvalid, ref.Digest, err)
		}
		return d, "", nil
	case ref.SemVer != "":
		c, err := semver.NewConstraint(ref.SemVer)
		if err != nil {
			return nil, "", fmt.Errorf("%w: semver range %q: %v", ErrRefInvalid, ref.SemVer, err)
		}
		tags, err := listTags(ctx, repo, opts)
		if err != nil {
			return nil, "", err
		}
		tag, ok := highest(tags, c)
		if !ok {
			return nil, "", fmt.Errorf("%w: no tag of %s in the range %q (%d tags)", ErrRefNotFound, repo, ref.SemVer, len(tags))
		}
		return repo.Tag(tag), tag, nil
	default:
		tag := ref.Tag
		if tag == "" {
			tag = "latest"
		}
		t, err := name.NewTag(repo.Name()+":"+tag, name.StrictValidation)
		if err != nil {
			return nil, "", fmt.Errorf("%w: tag %q: %v", ErrURLInvalid, tag, err)
		}
		return t, tag, nil
	}
}

// highest is the highest tag that parses as a version and satisfies c (a `+` in a
// version is written `_` in a tag, as Helm and Flux push them).
func highest(tags []string, c *semver.Constraints) (string, bool) {
	type cand struct {
		tag string
		v   *semver.Version
	}
	var in []cand
	for _, t := range tags {
		v, err := semver.NewVersion(strings.ReplaceAll(t, "_", "+"))
		if err == nil && c.Check(v) {
			in = append(in, cand{t, v})
		}
	}
	if len(in) == 0 {
		return "", false
	}
	sort.SliceStable(in, func(i, j int) bool { return in[i].v.LessThan(in[j].v) })
	return in[len(in)-1].tag, true
}

// listTags reads repo's tag list page by page, at most maxTagPages pages.
func listTags(ctx context.Context, repo name.Repository, opts []remote.Option) ([]string, error) {
	puller, err := remote.NewPuller(append(opts, remote.WithPageSize(tagPageSize))...)
	if err != nil {
		return nil, err
	}
	lister, err := puller.Lister(ctx, repo)
	if err != nil {
		return nil, registryError("listing the tags of "+repo.String(), err)
	}
	var tags []string
	for pages := 0; lister.HasNext(); pages++ {
		if pages == maxTagPages {
			return nil, fmt.Errorf("%s lists more than %d pages of tags: %w", repo, maxTagPages, ErrTooLarge)
		}
		page, err := lister.Next(ctx)
		if err != nil {
			return nil, registryError("listing the tags of "+repo.String(), err)
		}
		tags = append(tags, page.Tags...)
	}
	return tags, nil
}
