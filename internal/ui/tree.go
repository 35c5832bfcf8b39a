package ui

import (
	"context"
	"time"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/tree"
)

// Node is one object of an application's resource tree (internal/tree).
type Node = tree.Node

// readTimeout bounds the wait for a kind's informer the first time it is read.
const readTimeout = 10 * time.Second

// tree is the application's resource tree (internal/tree, the one `gitsync tree` shows)
// read from the cache as the request's caller may (callerReader): the inventory with each
// object's owned children below it, the hooks of the last run, and the number of nodes.
func (s *Server) tree(ctx context.Context, app *gitsyncv1.Application) ([]*Node, int, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	return tree.Build(ctx, callerReader{s: s, who: callerOf(ctx)}, app, tree.Options{Children: true, Hooks: true})
}
