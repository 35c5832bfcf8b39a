package applicationset

import (
	"sync"

	"github.com/gitsync-dev/gitsync/internal/appset"
)

// maxMemo bounds the Git generator results kept; the memo starts over when it is full.
const maxMemo = 256

// memo keeps what the Git generators read of a checkout, by checkout directory (one per
// commit: its content never changes) and generator: the status changes of a set's
// Applications wake the set often, and a large checkout is not walked again each time.
type memo struct {
	mu   sync.Mutex
	sets map[string][]appset.Params
}

func (m *memo) get(key string, compute func() ([]appset.Params, error)) ([]appset.Params, error) {
	m.mu.Lock()
	sets, ok := m.sets[key]
	m.mu.Unlock()
	if ok {
		return sets, nil
	}
	sets, err := compute()
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	if m.sets == nil || len(m.sets) >= maxMemo {
		m.sets = map[string][]appset.Params{}
	}
	m.sets[key] = sets
	m.mu.Unlock()
	return sets, nil
}
