package gittest

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strconv"
)

// Counts is what a Server served for one repository.
type Counts struct {
	// RefListings counts upload-pack ref advertisements: HTTP
	// GET <repo>.git/info/refs?service=git-upload-pack, and every SSH
	// git-upload-pack session.
	RefListings int
	// Fetches counts upload-pack requests that asked for objects (sent a
	// "want" line): HTTP POST <repo>.git/git-upload-pack, and SSH
	// git-upload-pack sessions.
	Fetches int
}

// Counts returns what was served for repo since the server was created or
// ResetCounts was called.
func (s *Server) Counts(repo string) Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.counts[repoName(repo)]; c != nil {
		return *c
	}
	return Counts{}
}

// ResetCounts sets all counts to zero.
func (s *Server) ResetCounts() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts = map[string]*Counts{}
}

func (s *Server) count(repo string, update func(*Counts)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	repo = repoName(repo)
	if s.counts[repo] == nil {
		s.counts[repo] = &Counts{}
	}
	update(s.counts[repo])
}

// requestWants reports whether an upload-pack request body asks for objects.
func requestWants(h http.Header, body []byte) bool {
	var r io.Reader = bytes.NewReader(body)
	if h.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(r)
		if err != nil {
			return false
		}
		r = gz
	}
	var d wantDetector
	_, _ = io.Copy(&d, r)
	return d.found
}

// wantDetector is a writer that parses a pkt-line stream sent to
// upload-pack and calls onWant the first time a "want " line goes by.
type wantDetector struct {
	buf    []byte
	done   bool // found a want, or the stream is not pkt-lines
	found  bool
	onWant func()
}

func (d *wantDetector) Write(p []byte) (int, error) {
	if d.done {
		return len(p), nil
	}
	d.buf = append(d.buf, p...)
	for len(d.buf) >= 4 && !d.done {
		n, err := strconv.ParseUint(string(d.buf[:4]), 16, 16)
		switch {
		case err != nil:
			d.done = true
		case n < 4: // flush, delim or response-end packet
			d.buf = d.buf[4:]
		case len(d.buf) < int(n):
			return len(p), nil // wait for the rest of the line
		default:
			if bytes.HasPrefix(d.buf[4:n], []byte("want ")) {
				d.found, d.done = true, true
				if d.onWant != nil {
					d.onWant()
				}
			}
			d.buf = d.buf[n:]
		}
	}
	if d.done {
		d.buf = nil
	}
	return len(p), nil
}
