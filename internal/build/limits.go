package build

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"go.yaml.in/yaml/v3"
)

// What one build may read, so that a single commit cannot exhaust the operator's memory
// (and with it every tenant's syncs). The sizes are checked before a file is parsed.
const (
	// MaxFileSize bounds each file a build reads.
	MaxFileSize = 8 << 20
	// MaxRenderSize bounds the files one build reads, together, and kustomize's output.
	MaxRenderSize = 32 << 20
	// maxNodes bounds the values one document may expand to (through aliases too), so
	// that a few lines of nested aliases ("billion laughs") cannot exhaust memory, and
	// the values a file may hold by estimateNodes, checked before it is parsed.
	maxNodes = 1 << 20
	// maxRenderValues bounds the values (YAML nodes: keys and values) of one build's
	// documents together. Memory follows values, not bytes: parsed, a value costs
	// 100-200 bytes, and 8 MiB of "[1,1,1,...]" would be 4 million of them, while a
	// 469 KB bundle of CRDs holds 7,300. A plain build at this limit peaks at about
	// 85 MiB of heap (BenchmarkBuildPlainNearValueLimit).
	maxRenderValues = 1 << 20
	// maxKustomizeValues bounds the values of the files kustomize reads in one build:
	// kustomize holds about four times the memory per value that a plain build does
	// (370 MiB of heap for 960,000 values; about 150 MiB at this limit:
	// BenchmarkBuildKustomizeNearValueLimit).
	maxKustomizeValues = maxRenderValues / 4
)

// ErrTooLarge is wrapped by the error for a file or render over MaxFileSize,
// MaxRenderSize or the expansion limit of YAML aliases.
var ErrTooLarge = errors.New("too large to build")

// budget counts what one build has read, against MaxFileSize and MaxRenderSize.
// Builds run one at a time per budget (kustomize runs are serialised), so it needs no lock.
type budget struct {
	total     int64
	values    int             // values of the documents parsed so far
	maxValues int             // the values allowed
	files     map[string]bool // files counted already: kustomize reads some more than once
	// refused is the first file refused by these checks: kustomize reports it wrapped in
	// text of its own (and without the error chain), so the build reports it instead.
	refused error
}

// newBudget returns an empty budget allowing maxValues values.
func newBudget(maxValues int) *budget {
	return &budget{files: map[string]bool{}, maxValues: maxValues}
}

// admit counts a file of size bytes (rel names it in errors) before it is read.
func (b *budget) admit(rel string, size int64) error {
	if size > MaxFileSize {
		return fmt.Errorf("%s is %s, over the %s limit for one file: %w", rel, mib(size), mib(MaxFileSize), ErrTooLarge)
	}
	if b.files[rel] {
		return nil
	}
	if b.total+size > MaxRenderSize {
		return fmt.Errorf("%s: the files read so far and this one are %s, over the %s limit for one build: %w",
			rel, mib(b.total+size), mib(MaxRenderSize), ErrTooLarge)
	}
	b.total += size
	b.files[rel] = true
	return nil
}

// statReader is an open file: *os.File, or kustomize's filesys.File.
type statReader interface {
	io.Reader
	Stat() (os.FileInfo, error)
}

// read reads the open file f (rel names it in errors) if its size fits the budget.
// A file that grows after its size was checked is still read only up to the limit.
func (b *budget) read(f statReader, rel string) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rel, withoutPath(err))
	}
	if fi.Mode().IsRegular() {
		if err := b.admit(rel, fi.Size()); err != nil {
			return nil, err
		}
	}
	data, err := io.ReadAll(io.LimitReader(f, fi.Size()+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rel, withoutPath(err))
	}
	if int64(len(data)) > fi.Size() {
		return nil, fmt.Errorf("reading %s: the file changed while it was read", rel)
	}
	return data, nil
}

// mib formats a size for messages: "8 MiB", "50.5 MiB", "2 KiB".
// refuse records err as the reason of the build's failure, unless one is recorded.
func (b *budget) refuse(err error) {
	if b.refused == nil {
		b.refused = err
	}
}

func mib(n int64) string {
	switch {
	case n < 1<<20:
		return fmt.Sprintf("%d KiB", (n+1023)>>10)
	case n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
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

// prescan refuses data (the file rel) before it is parsed if it may hold more than
// maxNodes values: parsing alone takes 100-200 bytes per value.
func prescan(rel string, data []byte) error {
	if n := estimateNodes(data); n > maxNodes {
		return fmt.Errorf("%s: the file may hold up to %d YAML values, over the %d that one file may hold: %w",
			rel, n, maxNodes, ErrTooLarge)
	}
	return nil
}

// count adds the values of a parsed document of the file rel to the render's.
func (b *budget) count(rel string, values int) error {
	b.values += values
	if b.values > b.maxValues {
		return fmt.Errorf("%s: the documents parsed so far hold more than %d values, over the limit for one build: %w",
			rel, b.maxValues, ErrTooLarge)
	}
	return nil
}

// checkYAML refuses data (the file rel) when it may hold too many values to parse
// (prescan), when a YAML document in it expands, through aliases, to more than
// maxNodes values or the build's values over the budget, or when it
// holds a scalar whose explicit tag does not fit it ("!!int secret"). It walks yaml.v3's node tree, which
// holds each aliased node once, counting every alias as the size of what it names
// (memoised), so the check itself costs the size of the file, not of the expansion.
// Data that is not YAML passes: it is for whoever reads it to report.
func (b *budget) checkYAML(rel string, data []byte) error {
	if err := prescan(rel, data); err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for doc := 1; ; doc++ {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			return nil // io.EOF, or not YAML: no expansion to bound
		}
		c := expansion{sizes: map[*yaml.Node]int{}}
		if size := c.size(&n); size > maxNodes {
			return fmt.Errorf("%s: document %d expands to more than %d values through YAML aliases: %w", rel, doc, maxNodes, ErrTooLarge)
		}
		if c.badTag != nil {
			// Kustomize would fail on it too, naming neither the file nor the line and
			// quoting the value.
			return fmt.Errorf("%s: line %d: the value tagged %s is not a valid %s (value redacted)", rel, c.badTag.Line, c.badTag.ShortTag(), c.badTag.ShortTag())
		}
		if err := b.count(rel, c.size(&n)); err != nil {
			return err
		}
	}
}

// expansion computes the expanded size of yaml.v3 nodes, saturating above maxNodes,
// and notes the first scalar whose explicit tag does not fit its value.
type expansion struct {
	sizes  map[*yaml.Node]int // -1 while the node is being sized (an alias cycle)
	badTag *yaml.Node
}

func (e *expansion) size(n *yaml.Node) int {
	if n == nil {
		return 0
	}
	if n.Kind == yaml.AliasNode {
		return e.size(n.Alias)
	}
	if s, ok := e.sizes[n]; ok {
		if s < 0 {
			return maxNodes + 1 // an alias to its own ancestor expands forever
		}
		return s
	}
	if len(n.Content) == 0 {
		if n.Kind == yaml.ScalarNode && n.Style&yaml.TaggedStyle != 0 && e.badTag == nil {
			if _, err := scalar(n); err != nil {
				e.badTag = n
			}
		}
		return 1 // scalars are not memoised: there are many and none is reached twice cheaply
	}
	e.sizes[n] = -1
	total := 1
	for _, c := range n.Content {
		total += e.size(c)
		if total > maxNodes {
			total = maxNodes + 1
			break
		}
	}
	e.sizes[n] = total
	return total
}
