package ui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// change names an object that changed; the browser refreshes the views it touches.
type change struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Owner is "Kind/name" of the object's owner, if any (a Pod's ReplicaSet).
	Owner string `json:"owner,omitempty"`
	// gvk and namespace are the changed object's own (an Event's, not its subject's):
	// a caller gets the change only when it may list them (AuthKubernetes).
	gvk       schema.GroupVersionKind
	namespace string
}

// streams counts the open event streams, in all and per caller: each holds a
// connection and a goroutine, so there are at most max, and perCaller per caller.
type streams struct {
	mu             sync.Mutex
	max, perCaller int
	open           int
	byCaller       map[string]int
}

func newStreams(max, perCaller int) *streams {
	return &streams{max: max, perCaller: perCaller, byCaller: map[string]int{}}
}

// acquire takes a stream for caller, false when a cap is reached; release gives it back.
func (s *streams) acquire(caller string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open >= s.max || s.byCaller[caller] >= s.perCaller {
		return false
	}
	s.open++
	s.byCaller[caller]++
	return true
}

func (s *streams) release(caller string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open--
	if s.byCaller[caller]--; s.byCaller[caller] <= 0 {
		delete(s.byCaller, caller)
	}
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
	who := callerOf(r.Context())
	if !s.streams.acquire(who.name) {
		w.Header().Set("Retry-After", "30")
		failWith(w, http.StatusServiceUnavailable, "too many open event streams; try again later")
		return
	}
	defer s.streams.release(who.name)
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
			if !s.mayList(r.Context(), who, c.gvk, c.namespace) {
				continue
			}
			data, _ := json.Marshal(c)
			fmt.Fprintf(w, "event: change\ndata: %s\n\n", data)
		}
		flusher.Flush()
	}
}
