package build

import (
	"fmt"
	"io"
	"os"

	"go.yaml.in/yaml/v3"

	"github.com/gitsync-dev/gitsync/internal/yamlbudget"
)

// What one build may read, so that a single commit cannot exhaust the operator's memory
// (and with it every tenant's syncs). The sizes are checked before a file is parsed.
const (
	// MaxFileSize bounds each file a build reads.
	MaxFileSize = 8 << 20
	// MaxRenderSize bounds the files one build reads, together, and kustomize's output.
	MaxRenderSize = 32 << 20
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
// MaxRenderSize or a limit of the YAML budget (yamlbudget.ErrTooLarge, which it is).
var ErrTooLarge = yamlbudget.ErrTooLarge

// budget counts what one build has read, against MaxFileSize and MaxRenderSize.
// Builds run one at a time per budget (kustomize runs are serialised), so it needs no lock.
type budget struct {
	total  int64
	values *yamlbudget.Budget // the values of the documents parsed so far
	files  map[string]bool    // files counted already: kustomize reads some more than once
	// refused is the first file refused by these checks: kustomize reports it wrapped in
	// text of its own (and without the error chain), so the build reports it instead.
	refused error
}

// newBudget returns an empty budget allowing maxValues values.
func newBudget(maxValues int) *budget {
	return &budget{files: map[string]bool{}, values: yamlbudget.New(maxValues)}
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

// prescan refuses data (the file rel) before it is parsed if it may hold more than
// yamlbudget.MaxValues values: parsing alone takes 100-200 bytes per value.
func prescan(rel string, data []byte) error {
	return yamlbudget.Prescan(rel, data)
}

// checkYAML refuses data (the file rel) when it may hold too many values to parse,
// when its YAML documents expand, through aliases, to more than yamlbudget.MaxValues
// values or the build's values over the budget, or nest too deep (yamlbudget), or when
// it holds a scalar whose explicit tag does not fit it ("!!int secret"). The check
// costs the size of the file, not of the expansion. Data that is not YAML passes: it is
// for whoever reads it to report.
func (b *budget) checkYAML(rel string, data []byte) error {
	return b.values.CheckScalars(rel, data, badTag)
}

// badTag is the budget's check of a scalar with an explicit tag: kustomize would fail on
// it too, naming neither the file nor the line and quoting the value.
func badTag(n *yaml.Node) error {
	if _, err := scalar(n); err != nil {
		return fmt.Errorf("line %d: the value tagged %s is not a valid %s (value redacted)", n.Line, n.ShortTag(), n.ShortTag())
	}
	return nil
}
