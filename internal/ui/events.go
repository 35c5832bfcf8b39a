package ui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// change names an object that changed; the browser refreshes the views it touches.
type change struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Owner is "Kind/name" of the object's owner, if any (a Pod's ReplicaSet).
	Owner string `json:"owner,omitempty"`
}

// broker fans the cache's changes out to every connected browser.
type broker struct {
	mu   sync.Mutex
	subs map[chan change]struct{}
}

func newBroker() *broker { return &broker{subs: map[chan change]struct{}{}} }

func (b *broker) subscribe() chan change {
	ch := make(chan change, 256)
	b.mu.Lock()
	b.subs[ch] = struct{}{}
	b.mu.Unlock()
	return ch
}

func (b *broker) unsubscribe(ch chan change) {
	b.mu.Lock()
	delete(b.subs, ch)
	b.mu.Unlock()
}

// publish never blocks: a browser that falls behind loses changes, and its page
// refreshes on the next one anyway.
func (b *broker) publish(c change) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		select {
		case ch <- c:
		default:
		}
	}
}

// apiEvents streams changes as server-sent events ("change" events with JSON data), with
// a comment every 15 s to keep proxies from closing the stream.
func (s *Server) apiEvents(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	ch := s.broker.subscribe()
	defer s.broker.unsubscribe(ch)
	fmt.Fprint(w, "retry: 1000\n: connected\n\n")
	flusher.Flush()
	keepalive := time.NewTicker(15 * time.Second)
	defer keepalive.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-keepalive.C:
			fmt.Fprint(w, ": keepalive\n\n")
		case c := <-ch:
			data, _ := json.Marshal(c)
			fmt.Fprintf(w, "event: change\ndata: %s\n\n", data)
		}
		flusher.Flush()
	}
}
