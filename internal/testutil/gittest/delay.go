package gittest

import (
	"net/http"
	"time"
)

// SetFetchDelay makes every HTTP upload-pack request that asks for objects wait d before
// it is served (a slow Git host: ref listings stay fast); 0 turns it off.
func (s *Server) SetFetchDelay(d time.Duration) { s.fetchDelay.Store(int64(d)) }

// holdFetch waits the fetch delay; false when the client went away meanwhile.
func (s *Server) holdFetch(r *http.Request) bool {
	d := time.Duration(s.fetchDelay.Load())
	if d <= 0 {
		return true
	}
	select {
	case <-time.After(d):
		return true
	case <-r.Context().Done():
		return false
	}
}
