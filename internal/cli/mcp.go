package cli

import (
	"bytes"
	"context"
	"io"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitsync-dev/gitsync/internal/mcp"
)

func (o *options) newMCPCommand() *cobra.Command {
	var allowWrite bool
	cmd := &cobra.Command{
		Use:   "mcp [--allow-write]",
		Short: "Serve a Model Context Protocol server over stdio with your kubeconfig's identity (read-only unless --allow-write)",
		Long: `Serves gitsync's tools to an MCP client (an AI assistant) over stdin/stdout: list and get
Applications and sources, an Application's tree, diff (also at another commit or branch),
history and events, and explain (why it is not Ready, Synced or Healthy). With
--allow-write it also offers reconcile, suspend, resume and rollback_application; without
it they are not offered at all. Every call acts as you (your kubeconfig), so Kubernetes
RBAC applies, and every call is logged to stderr.`,
		Example: `  # in an MCP client's configuration:
  {"mcpServers": {"gitsync": {"command": "gitsync", "args": ["mcp", "--context", "prod"]}}}`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			srv, err := o.newMCPServer(allowWrite)
			if err != nil {
				return err
			}
			return srv.Run(cmd.Context(), &sdk.IOTransport{Reader: io.NopCloser(o.In), Writer: nopCloser{o.Out}})
		},
	}
	cmd.Flags().BoolVar(&allowWrite, "allow-write", false, "also offer the write tools: reconcile, suspend, resume, rollback_application")
	return cmd
}

// newMCPServer wires the MCP server to the CLI's client, diff, tree, events and writes.
func (o *options) newMCPServer(allowWrite bool) (*mcp.Server, error) {
	c, err := o.client()
	if err != nil {
		return nil, err
	}
	ns, err := o.namespace()
	if err != nil {
		return nil, err
	}
	return mcp.New(mcp.Options{
		Client: c, Namespace: ns, AllowWrite: allowWrite, Log: o.ErrOut, Version: clientVersion(),
		Diff: o.mcpDiff,
		Tree: func(ctx context.Context, ns, name string, children bool) ([]*mcp.TreeNode, error) {
			c, app, err := o.readApp(ctx, ns, name)
			if err != nil {
				return nil, err
			}
			nodes, err := inventoryTree(ctx, c, app, children)
			if err != nil {
				return nil, err
			}
			return treeNodes(nodes), nil
		},
		Events: o.mcpEvents,
		Reconcile: func(ctx context.Context, k, ns, name string, withSource bool) (string, error) {
			return o.captured(func(q *options) error {
				kk, c, err := q.kindAndClient(k)
				if err != nil {
					return err
				}
				r := &reconcileOptions{options: q, withSource: withSource, timeout: 5 * time.Minute}
				return r.reconcileObject(ctx, c, kk, client.ObjectKey{Namespace: ns, Name: name})
			})
		},
		Suspend: func(ctx context.Context, k, ns, name string, suspend bool) (string, error) {
			return o.captured(func(q *options) error {
				kk, c, err := q.kindAndClient(k)
				if err != nil {
					return err
				}
				return q.patchSuspend(ctx, c, kk, client.ObjectKey{Namespace: ns, Name: name}, suspend)
			})
		},
		Rollback: func(ctx context.Context, ns, name, to string) (string, error) {
			ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
			defer cancel()
			return o.captured(func(q *options) error { return q.rollback(ctx, ns, name, to) })
		},
	})
}

// captured runs f with a copy of o whose output goes to a buffer (stdout is the MCP
// channel) and returns what it printed.
func (o *options) captured(f func(*options) error) (string, error) {
	var out bytes.Buffer
	q := *o
	q.Out = &out
	err := f(&q)
	return out.String(), err
}

func (o *options) kindAndClient(k string) (kind, client.WithWatch, error) {
	kk, err := parseKind(k)
	if err != nil {
		return "", nil, err
	}
	c, err := o.client()
	return kk, c, err
}

// mcpDiff is `gitsync diff app NAME` (or at revision) as data and its printed report.
func (o *options) mcpDiff(ctx context.Context, ns, name, revision string) (*mcp.DiffResult, error) {
	app, r, outcomes, err := o.diffApp(ctx, ns, name, localPath{}, revision, false, false) // never lookup as the caller
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	changes := report(maskingWriter{w: &out, sensitive: r.sensitive}, app, r.from, outcomes)
	return &mcp.DiffResult{From: r.from, Changes: changes, Report: out.String()}, nil
}

// mcpEvents are the events `gitsync events app NAME` prints, as data.
func (o *options) mcpEvents(ctx context.Context, ns, name string) ([]mcp.Event, error) {
	c, app, err := o.readApp(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	events, err := appEvents(ctx, c, app)
	if err != nil {
		return nil, err
	}
	out := make([]mcp.Event, 0, len(events))
	for _, e := range events {
		out = append(out, mcp.Event{Time: eventTime(e), Type: e.Type, Reason: e.Reason,
			Object: e.InvolvedObject.Kind + "/" + e.InvolvedObject.Name, Message: strings.TrimSpace(e.Message)})
	}
	return out, nil
}

func treeNodes(nodes []*node) []*mcp.TreeNode {
	out := make([]*mcp.TreeNode, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, &mcp.TreeNode{Kind: n.Kind, Namespace: n.Namespace, Name: n.Name, Health: n.Health, Children: treeNodes(n.Children)})
	}
	return out
}

// nopCloser leaves the process's stdout open when the MCP session ends.
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
