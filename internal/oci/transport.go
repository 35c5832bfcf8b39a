package oci

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// Bounds of the registry's answers that are decoded whole (go-containerregistry alone
// reads a manifest of up to 100 MiB into memory). Blobs are bounded where they are read.
const (
	maxManifestBytes = 1 << 20
	maxTagPageBytes  = 4 << 20
)

// capAnswers caps the body of every answer but a blob's.
type capAnswers struct{ next http.RoundTripper }

func (c capAnswers) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err != nil || (strings.Contains(req.URL.Path, "/blobs/") && resp.StatusCode < 300) {
		return resp, err
	}
	limit, what := int64(maxManifestBytes), "an answer of the registry"
	if strings.HasSuffix(req.URL.Path, "/tags/list") {
		limit, what = maxTagPageBytes, "a tag list page"
	}
	resp.Body = &capped{ReadCloser: resp.Body, left: limit, max: limit, what: what}
	return resp, nil
}

// capped fails a read past max bytes with ErrTooLarge.
type capped struct {
	io.ReadCloser
	left, max int64
	what      string
}

func (b *capped) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	if b.left -= int64(n); b.left < 0 {
		return n, fmt.Errorf("%s is larger than %d bytes: %w", b.what, b.max, ErrTooLarge)
	}
	return n, err
}

// registryError names what failed; a 401 or 403 wraps ErrUnauthorized, a 404
// ErrRefNotFound.
func registryError(what string, err error) error {
	var te *transport.Error
	if errors.As(err, &te) {
		switch te.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			return fmt.Errorf("%s: %w (HTTP %d)", what, ErrUnauthorized, te.StatusCode)
		case http.StatusNotFound:
			return fmt.Errorf("%s: %w", what, ErrRefNotFound)
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}
