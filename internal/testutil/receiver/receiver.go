// Package receiver is an in-process HTTP server that records the requests it gets and answers with programmed status codes (notification tests).
package receiver

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Request is one recorded request.
type Request struct {
	Method, Path string
	Header       http.Header
	Body         []byte
	// Status is what the receiver answered.
	Status int
}

// Server records requests; it answers each with the next programmed status (200 once
// they run out), or hangs until the test ends when Hang is set.
type Server struct {
	*httptest.Server

	mu       sync.Mutex
	requests []Request
	statuses []int
	hang     chan struct{}
}

// New starts a receiver that is closed when the test ends.
func New(t testing.TB) *Server {
	s := &Server{}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		s.mu.Lock()
		if s.hang != nil {
			close(s.hang)
			s.hang = nil
		}
		s.mu.Unlock()
		s.Server.CloseClientConnections()
		s.Server.Close()
	})
	return s
}

// Answer programs the status codes of the next requests, in order.
func (s *Server) Answer(statuses ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.statuses = append(s.statuses, statuses...)
}

// Hang makes every request wait until the test ends.
func (s *Server) Hang() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hang = make(chan struct{})
}

// Requests returns a copy of the recorded requests.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	hang := s.hang
	status := http.StatusOK
	if len(s.statuses) > 0 {
		status, s.statuses = s.statuses[0], s.statuses[1:]
	}
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.EscapedPath(), Header: r.Header.Clone(), Body: body, Status: status})
	s.mu.Unlock()
	if hang != nil {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(`{"ok":true}`))
}
