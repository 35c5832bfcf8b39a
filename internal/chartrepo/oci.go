package chartrepo

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gitsync-dev/gitsync/internal/limits"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// ChartLayerMediaType is the layer of an OCI artifact that holds the chart archive.
const ChartLayerMediaType = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"

// PollTags lists the tags of each chart (a repository under src's oci:// URL) and keeps
// them as an index of the versions found; a chart the registry does not know has none.
func (s *Store) PollTags(ctx context.Context, src Source, charts []string) (Poll, error) {
	timeout := s.timeoutOf(src)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	poll, err := s.pollTags(ctx, src, charts)
	return poll, timedOut(ctx, timeout, err)
}

func (s *Store) pollTags(ctx context.Context, src Source, charts []string) (Poll, error) {
	opts, err := s.remoteOptions(ctx, src)
	if err != nil {
		return Poll{}, err
	}
	tags := map[string][]string{}
	for _, chart := range charts {
		ref := strings.TrimPrefix(strings.TrimSuffix(src.URL, "/"), "oci://") + "/" + chart
		repository, err := name.NewRepository(ref)
		if err != nil {
			return Poll{}, fmt.Errorf("chart %q in %s: %w", chart, src.URL, err)
		}
		list, err := s.listTags(ctx, repository, opts)
		if err != nil {
			if isNotFound(err) {
				tags[chart] = nil
				continue
			}
			return Poll{}, ociError("listing the tags of "+ref, err)
		}
		tags[chart] = list
	}
	data, err := ociIndex(src, tags)
	if err != nil {
		return Poll{}, err
	}
	digest, err := s.storeIndex(data, src.URL)
	if err != nil {
		return Poll{}, err
	}
	return Poll{Digest: digest}, nil
}

// fetchOCI pulls the chart layer of ref (oci://host/path/chart:tag).
func (s *Store) fetchOCI(ctx context.Context, src Source, ref string) (string, int64, error) {
	opts, err := s.remoteOptions(ctx, src)
	if err != nil {
		return "", 0, err
	}
	r, err := name.ParseReference(strings.TrimPrefix(ref, "oci://"))
	if err != nil {
		return "", 0, fmt.Errorf("chart reference %s: %w", ref, err)
	}
	img, err := remote.Image(r, opts...)
	if err != nil {
		return "", 0, ociError("reading "+ref, err)
	}
	manifest, err := img.Manifest()
	if err != nil {
		return "", 0, ociError("reading the manifest of "+ref, err)
	}
	for _, l := range manifest.Layers {
		if string(l.MediaType) != ChartLayerMediaType {
			continue
		}
		if l.Size > MaxChartSize {
			return "", 0, fmt.Errorf("chart archive %s is larger than the %d bytes allowed (%d bytes): %w", ref, MaxChartSize, l.Size, ErrTooLarge)
		}
		// No shortcut through an archive of the same digest in the cache: that another
		// identity stored it says nothing of what this registry serves to these
		// credentials, and a manifest naming a digest costs its author nothing. The blob
		// is downloaded (and its digest checked) once per identity; Fetch serves the
		// identity's own record after that. A HEAD would not do: a hostile registry can
		// answer yes to any digest.
		layer, err := img.LayerByDigest(l.Digest)
		if err != nil {
			return "", 0, ociError("reading the chart layer of "+ref, err)
		}
		rc, err := layer.Compressed()
		if err != nil {
			return "", 0, ociError("reading the chart layer of "+ref, err)
		}
		defer rc.Close()
		return s.storeChart(rc, l.Size, "sha256:"+l.Digest.Hex, ref)
	}
	return "", 0, fmt.Errorf("%s holds no Helm chart layer (%s)", ref, ChartLayerMediaType)
}

// listTags reads the tag list of repository page by page, at most MaxTagPages pages of
// DefaultTagPageSize tags (a page's answer at most MaxTagPageBytes): a registry that
// pages forever, or answers one endless page, fails the poll instead of the operator.
func (s *Store) listTags(ctx context.Context, repository name.Repository, opts []remote.Option) ([]string, error) {
	puller, err := remote.NewPuller(append(opts, remote.WithPageSize(DefaultTagPageSize))...)
	if err != nil {
		return nil, err
	}
	lister, err := puller.Lister(ctx, repository)
	if err != nil {
		return nil, err
	}
	var tags []string
	for pages := 0; lister.HasNext(); pages++ {
		if pages == s.opts.MaxTagPages {
			return nil, fmt.Errorf("%s lists more than %d pages of tags: %w", repository, s.opts.MaxTagPages, ErrTooLarge)
		}
		page, err := lister.Next(ctx)
		if err != nil {
			return nil, err
		}
		tags = append(tags, page.Tags...)
	}
	return tags, nil
}

func (s *Store) remoteOptions(ctx context.Context, src Source) ([]remote.Option, error) {
	t, err := s.transport(src)
	if err != nil {
		return nil, err
	}
	var rt http.RoundTripper = deadlineTransport{next: t, timeout: s.timeoutOf(src)}
	opts := []remote.Option{remote.WithContext(ctx), remote.WithTransport(limits.RegistryAnswers{Next: rt, Answer: MaxManifestBytes, TagPage: MaxTagPageBytes, TooLarge: ErrTooLarge})}
	if src.Username != "" || src.Password != "" {
		opts = append(opts, remote.WithAuth(&authn.Basic{Username: src.Username, Password: src.Password}))
	}
	return opts, nil
}

func isNotFound(err error) bool {
	var te *transport.Error
	return errors.As(err, &te) && te.StatusCode == http.StatusNotFound
}

// ociError turns a registry's refusal into a StatusError (so that 401 reads as
// unauthorized), keeping the registry's message.
func ociError(what string, err error) error {
	var te *transport.Error
	if errors.As(err, &te) && te.StatusCode != 0 {
		return fmt.Errorf("%s: %w", what, &StatusError{URL: te.Request.URL.String(), Code: te.StatusCode})
	}
	return fmt.Errorf("%s: %w", what, err)
}
