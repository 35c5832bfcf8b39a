package webhook

import (
	"net/http"
	"time"
)

// Timeouts of the receiver's HTTP server. A provider sends a delivery of at
// most a few hundred KiB at once and waits a few seconds for the answer, so
// these only cut off clients that trickle bytes to hold connections open.
const (
	// ReadHeaderTimeout bounds reading the request line and headers.
	ReadHeaderTimeout = 10 * time.Second
	// ReadTimeout bounds reading the whole request, body (at most
	// Options.MaxBodyBytes) included.
	ReadTimeout = 30 * time.Second
	// WriteTimeout bounds a request from the end of its headers to the end of
	// the answer, which includes the Wake calls (at most wakeTimeout).
	WriteTimeout = 30 * time.Second
	// IdleTimeout closes a kept-alive connection that sends nothing more.
	IdleTimeout = 60 * time.Second
	// MaxHeaderBytes caps the request headers.
	MaxHeaderBytes = 64 << 10
)

// NewServer returns an http.Server for the receiver h with the timeouts above;
// the caller sets Addr or calls Serve.
func NewServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
	}
}
