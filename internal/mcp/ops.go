package mcp

import (
	"context"
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitsync-dev/gitsync/internal/operations"
	"github.com/gitsync-dev/gitsync/internal/tree"
)

// timeout bounds a write tool's wait for the controller, as the CLI's --timeout default.
const timeout = 5 * time.Minute

// defaults sets the operations that opts does not replace: internal/operations over
// the user's client.
func (s *Server) defaults() {
	c := s.opts.Client
	if s.opts.Diff == nil {
		s.opts.Diff = func(ctx context.Context, ns, name, revision string) (*DiffResult, error) {
			// Never decrypt nor look up as the caller: an assistant's output must not
			// carry what the person may read and the Application may not.
			d, err := operations.DiffApp(ctx, s.opts.Config, c, client.ObjectKey{Namespace: ns, Name: name}, operations.DiffOptions{Revision: revision})
			if err != nil {
				return nil, err
			}
			return &DiffResult{From: d.Rendered.From, Changes: d.Changes(), Report: d.Report()}, nil
		}
	}
	if s.opts.Tree == nil {
		s.opts.Tree = func(ctx context.Context, ns, name string, children bool) ([]*TreeNode, error) {
			app, err := operations.GetApp(ctx, c, client.ObjectKey{Namespace: ns, Name: name})
			if err != nil {
				return nil, err
			}
			nodes, err := operations.Tree(ctx, c, app, children)
			if err != nil {
				return nil, err
			}
			return treeNodes(nodes), nil
		}
	}
	if s.opts.Events == nil {
		s.opts.Events = func(ctx context.Context, ns, name string) ([]Event, error) {
			app, err := operations.GetApp(ctx, c, client.ObjectKey{Namespace: ns, Name: name})
			if err != nil {
				return nil, err
			}
			return operations.Events(ctx, c, app)
		}
	}
	if s.opts.Reconcile == nil {
		s.opts.Reconcile = func(ctx context.Context, k, ns, name string, withSource bool) (string, error) {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			var out steps
			err := operations.Reconcile(ctx, c, operations.Kind(k), client.ObjectKey{Namespace: ns, Name: name},
				operations.SyncOptions{WithSource: withSource}, out.add)
			return out.String(), err
		}
	}
	if s.opts.Suspend == nil {
		s.opts.Suspend = func(ctx context.Context, k, ns, name string, suspend bool) (string, error) {
			key := client.ObjectKey{Namespace: ns, Name: name}
			if _, err := operations.SetSuspend(ctx, c, operations.Kind(k), key, suspend); err != nil {
				return "", err
			}
			state := map[bool]string{true: "suspended", false: "resumed"}[suspend]
			return fmt.Sprintf("%s %s %s\n", operations.Kind(k).Name(), key, state), nil
		}
	}
	if s.opts.Rollback == nil {
		s.opts.Rollback = func(ctx context.Context, ns, name, to string) (string, error) {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			var out steps
			err := operations.Rollback(ctx, c, client.ObjectKey{Namespace: ns, Name: name}, to, out.add)
			return out.String(), err
		}
	}
}

// steps collects a reconcile's steps, one line each.
type steps struct{ b strings.Builder }

func (s *steps) add(st operations.Step) { s.b.WriteString(st.String() + "\n") }

func (s *steps) String() string { return s.b.String() }

func treeNodes(nodes []*tree.Node) []*TreeNode {
	out := make([]*TreeNode, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, &TreeNode{Kind: n.Kind, Namespace: n.Namespace, Name: n.Name, Health: n.Health, Children: treeNodes(n.Children)})
	}
	return out
}
