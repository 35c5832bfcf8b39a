// Package yamlbudget bounds what parsing a tenant's YAML may cost: bytes, values (aliases expanded) and nesting depth, counted across every document.
package yamlbudget

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"go.yaml.in/yaml/v3"
)

// The limits every YAML stream that the operator parses from a tenant (manifests,
// kustomize inputs, SOPS files, Helm values files and rendered templates) is checked
// against before anything expands it. Memory follows values, not bytes: parsed, a value
// costs 100-200 bytes, and a few lines of nested aliases ("billion laughs") name
// billions of them.
const (
	// MaxBytes bounds one stream.
	MaxBytes = 8 << 20
	// MaxValues bounds the values (YAML nodes: keys and values, aliases counted as the
	// size of what they name) of one stream's documents together, and the default of a
	// Budget. A plain build at this limit peaks at about 85 MiB of heap.
	MaxValues = 1 << 20
	// MaxDepth bounds the nesting of a document, aliases followed. Kubernetes objects
	// (CRD schemas included) nest far less than this.
	MaxDepth = 1000
)

// ErrTooLarge is wrapped by every error of a Budget.
var ErrTooLarge = errors.New("too large to parse")

// Budget counts the YAML values parsed for one purpose (one build, one render's SOPS
// files) against its limit; each stream is also held to MaxBytes and MaxValues alone.
// It is safe for concurrent use.
type Budget struct {
	max int

	mu   sync.Mutex
	used int
}

// New returns a budget allowing max values in all (at most MaxValues per stream).
func New(max int) *Budget {
	return &Budget{max: max}
}

// Check refuses data, a stream of YAML documents from the file name (named in errors),
// when one stream alone may cost more than MaxBytes or MaxValues: the budget is used
// once. Data that is not YAML passes: it is for whoever reads it to report.
func Check(name string, data []byte) error {
	return New(MaxValues).Check(name, data)
}

// Check refuses data, a stream of YAML documents from the file name, when it is over
// MaxBytes, may hold more than MaxValues values (Prescan), or when its documents expand
// through aliases, together, to more than MaxValues values, to more than the budget has
// left, or deeper than MaxDepth. It costs the size of data, not of any expansion: yaml's
// node tree holds each aliased node once. Data that is not YAML passes (from the first
// document that does not parse): it is for whoever reads it to report.
func (b *Budget) Check(name string, data []byte) error {
	return b.CheckScalars(name, data, nil)
}

// CheckScalars is Check that also calls scalar, when it is not nil, with each scalar
// written with an explicit tag ("!!int x"); its error fails the check.
func (b *Budget) CheckScalars(name string, data []byte, scalar func(*yaml.Node) error) error {
	if err := Prescan(name, data); err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	stream := 0
	for doc := 1; ; doc++ {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			return nil // io.EOF, or not YAML: no expansion to bound
		}
		size, err := b.document(name, doc, &n, stream, scalar)
		if err != nil {
			return err
		}
		stream += size
	}
}

// Document counts n, document doc of the stream name, in the budget, as Check does for
// each document; it is for readers that parse the nodes themselves, before they expand
// them. The stream's own limit is then only the budget's.
func (b *Budget) Document(name string, doc int, n *yaml.Node) error {
	_, err := b.document(name, doc, n, 0, nil)
	return err
}

func (b *Budget) document(name string, doc int, n *yaml.Node, stream int, scalar func(*yaml.Node) error) (int, error) {
	w := walk{sizes: map[*yaml.Node]shape{}, scalar: scalar, limit: MaxValues}
	s := w.shape(n)
	switch {
	case w.err != nil:
		return 0, fmt.Errorf("%s: %w", name, w.err)
	case s.depth > MaxDepth:
		return 0, fmt.Errorf("%s: document %d nests deeper than %d levels: %w", name, doc, MaxDepth, ErrTooLarge)
	case s.size > MaxValues:
		return 0, fmt.Errorf("%s: document %d expands to more than %d values through YAML aliases: %w", name, doc, MaxValues, ErrTooLarge)
	case stream+s.size > MaxValues:
		return 0, fmt.Errorf("%s: documents 1 to %d expand to more than %d values through YAML aliases: %w", name, doc, MaxValues, ErrTooLarge)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used += s.size
	if b.used > b.max {
		return 0, fmt.Errorf("%s: the documents parsed so far hold more than %d values, over the limit for one build: %w",
			name, b.max, ErrTooLarge)
	}
	return s.size, nil
}

// Prescan refuses data, the file name, before it is parsed when it is over MaxBytes or
// may hold more than MaxValues values (estimateNodes): parsing alone takes 100-200
// bytes per value.
func Prescan(name string, data []byte) error {
	if len(data) > MaxBytes {
		return fmt.Errorf("%s is %d bytes, over the %d bytes one YAML file may hold: %w", name, len(data), MaxBytes, ErrTooLarge)
	}
	if n := estimateNodes(data); n > MaxValues {
		return fmt.Errorf("%s: the file may hold up to %d YAML values, over the %d that one file may hold: %w",
			name, n, MaxValues, ErrTooLarge)
	}
	return nil
}

// estimateNodes returns an upper bound of the YAML nodes in data, without parsing it:
// each node but the first follows an indicator of its own (a comma, "[", "{", "-",
// or, for a key and its value together, a colon or "?"). Indicators inside strings
// and comments only make the bound looser.
func estimateNodes(data []byte) int {
	n := 0
	for _, c := range data {
		switch c {
		case ',', '[', '{', ':', '-', '?':
			n++
		}
	}
	return 2*n + 2
}
