package source

import "fmt"

// DefaultMaxFiles is the most tree entries (files, directories, symlinks, submodules and
// ignored paths alike) a checkout walks when Request.MaxFiles is 0. A GitOps repository
// holds thousands; kubernetes/kubernetes, among the largest monorepos on GitHub, holds
// about 30,000. A tree that names one subtree or blob over and over (a ~1 MiB pack can
// describe millions of paths) stops here instead of filling the disk and the inode table.
const DefaultMaxFiles = 100_000

// checkoutLimits bound what one checkout writes: tree entries walked and bytes written.
type checkoutLimits struct {
	maxFiles int   // > 0
	maxBytes int64 // 0: no limit
	files    int
	bytes    int64
}

func newCheckoutLimits(maxFiles int, maxBytes int64) *checkoutLimits {
	if maxFiles <= 0 {
		maxFiles = DefaultMaxFiles
	}
	return &checkoutLimits{maxFiles: maxFiles, maxBytes: max(maxBytes, 0)}
}

// entry charges one tree entry walked.
func (l *checkoutLimits) entry() error {
	l.files++
	if l.files > l.maxFiles {
		return fmt.Errorf("%w: the commit's tree has more than %d files and directories (the limit of a checkout)",
			ErrTooLarge, l.maxFiles)
	}
	return nil
}

// write charges n bytes about to be written, before they are.
func (l *checkoutLimits) write(rel string, n int64) error {
	l.bytes += n
	if l.maxBytes > 0 && l.bytes > l.maxBytes {
		return fmt.Errorf("%w: writing %q takes the checkout over the size limit of %d bytes (spec.maxSize)",
			ErrTooLarge, rel, l.maxBytes)
	}
	return nil
}
