package ui

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Serve serves h on ln until ctx ends.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		return fmt.Errorf("serving the ui on %s: %w", ln.Addr(), err)
	}
	return nil
}

// Run starts the cache, waits until it has synced, then serves the UI on addr until ctx
// ends; ready (when not nil) gets the URL once the UI answers, with ?token= the launch
// token (AuthLaunchToken).
func (s *Server) Run(ctx context.Context, addr string, ready func(url string)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	if host, _, err := net.SplitHostPort(addr); err == nil {
		s.mu.Lock()
		s.listen = host
		s.mu.Unlock()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 2)
	go func() { errc <- s.Start(ctx) }()
	if !s.WaitForCacheSync(ctx) {
		ln.Close()
		cancel()
		return fmt.Errorf("reading the cluster for the ui: %w", <-errc)
	}
	if ready != nil {
		url := "http://" + ln.Addr().String() + "/"
		if s.token != "" {
			url += "?token=" + s.token
		}
		ready(url)
	}
	go func() { errc <- Serve(ctx, ln, s) }()
	select {
	case <-ctx.Done():
		return nil
	case err := <-errc:
		return err
	}
}
