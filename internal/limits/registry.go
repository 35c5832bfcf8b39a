package limits

import (
	"fmt"
	"io"
	"net/http"
	"strings"
)

// RegistryAnswers caps the body of each answer of an OCI registry that is decoded whole
// (go-containerregistry alone reads a manifest of up to 100 MiB into memory): a tag list
// page at TagPage bytes, any other answer at Answer bytes. A successful blob answer is
// left to the caller, which caps it where it stores it, unless Blobs is set. A read past
// a cap fails with an error that wraps TooLarge. Chart pulls, OCI sources and the image
// scanner share it.
type RegistryAnswers struct {
	Next            http.RoundTripper
	Answer, TagPage int64
	// Blobs caps successful blob answers too (at Answer).
	Blobs    bool
	TooLarge error
}

// RoundTrip sends req through Next and caps the answer's body.
func (r RegistryAnswers) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.Next.RoundTrip(req)
	if err != nil || (!r.Blobs && strings.Contains(req.URL.Path, "/blobs/") && resp.StatusCode < 300) {
		return resp, err
	}
	limit, what := r.Answer, "an answer of the registry"
	if strings.HasSuffix(req.URL.Path, "/tags/list") {
		limit, what = r.TagPage, "a tag list page"
	}
	resp.Body = CapReader(resp.Body, limit, what, r.TooLarge)
	return resp, nil
}

// CapReader fails a read of rc past max bytes with "<what> is larger than <max> bytes",
// wrapping tooLarge.
func CapReader(rc io.ReadCloser, max int64, what string, tooLarge error) io.ReadCloser {
	return &capped{ReadCloser: rc, left: max, max: max, what: what, tooLarge: tooLarge}
}

type capped struct {
	io.ReadCloser
	left, max int64
	what      string
	tooLarge  error
}

func (b *capped) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	if b.left -= int64(n); b.left < 0 {
		return n, fmt.Errorf("%s is larger than %d bytes: %w", b.what, b.max, b.tooLarge)
	}
	return n, err
}
