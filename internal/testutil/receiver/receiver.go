// Package receiver is an in-process HTTP server that records the requests it gets and answers with programmed status codes (notification tests).
package receiver

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
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
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	// A loopback address of its own (all of 127.0.0.0/8 is loopback on Linux): a port the
	// OS hands out again never brings an earlier test's late retry to this receiver.
	addr := fmt.Sprintf("127.%d.%d.%d:0", 1+rand.IntN(254), rand.IntN(256), 1+rand.IntN(254))
	if l, err := net.Listen("tcp", addr); err == nil {
		s.Server.Listener.Close()
		s.Server.Listener = l
	}
	s.Server.Start()
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
