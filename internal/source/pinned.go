package source

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// canCheckAncestry reports whether a commit pinned below a branch's tip can
// be fetched alone: the server sends a branch's commits without their trees
// (partial clone filter tree:0) to check that the commit is in the branch,
// and then that one commit by its id.
func canCheckAncestry(caps *capability.List) bool {
	return canFetchByID(caps) && caps.Supports(capability.Filter)
}

// inBranch fetches the commits (no trees, no blobs) of the branch whose tip is
// t.want into st and returns an error wrapping ErrRefNotFound when t.commit
// is not among them.
func inBranch(ctx context.Context, rem *remote, st storer.Storer, t target, maxSize int64) error {
	if err := rem.fetchFiltered(ctx, st, t.want, 0, packp.FilterTreeDepth(0), maxSize); err != nil {
		return err
	}
	seen := map[plumbing.Hash]bool{t.want: true}
	queue := []plumbing.Hash{t.want}
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		if h == t.commit {
			return nil
		}
		c, err := object.GetCommit(st, h)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			continue // beyond a shallow boundary of the server's
		}
		if err != nil {
			return fmt.Errorf("reading commit %s: %w", h, err)
		}
		for _, p := range c.ParentHashes {
			if !seen[p] {
				seen[p] = true
				queue = append(queue, p)
			}
		}
	}
	return fmt.Errorf("%w: commit %s is not in branch %q", ErrRefNotFound, t.commit, t.name)
}
