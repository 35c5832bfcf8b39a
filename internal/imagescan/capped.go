package imagescan

import (
	"fmt"
	"io"
	"net/http"
)

// cappedAnswers caps the body of every registry answer at MaxPageBytes: a registry that
// answers one endless page fails the scan instead of filling the operator's memory.
type cappedAnswers struct{ next http.RoundTripper }

func (c cappedAnswers) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	resp.Body = &cappedBody{ReadCloser: resp.Body, left: MaxPageBytes}
	return resp, nil
}

type cappedBody struct {
	io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	if b.left -= int64(n); b.left < 0 {
		return n, fmt.Errorf("an answer of the registry is larger than %d bytes: %w", MaxPageBytes, ErrTooLarge)
	}
	return n, err
}
