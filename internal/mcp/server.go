package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitsync-dev/gitsync/internal/operations"
)

// Options are what the server reads the cluster with. The tools present
// internal/operations over Client; the function fields replace one operation (tests).
type Options struct {
	// Client reads, watches (and, with AllowWrite, patches) as the user.
	Client client.WithWatch
	// Config is Client's configuration: with it, diff_application renders (discovery
	// gives a chart the cluster's capabilities); without it (and without Diff) diff is
	// not available.
	Config *rest.Config
	// Namespace is the default of every tool's namespace argument.
	Namespace string
	// AllowWrite adds the write tools (reconcile, suspend, resume, rollback); without it
	// they are not listed and cannot be called.
	AllowWrite bool
	// Log receives one line per tool call (name, arguments, outcome); nil: discarded.
	Log io.Writer
	// Version is reported to clients as the server's version.
	Version string

	// Diff renders ns/name at revision ("": the source's current or pinned revision) and
	// compares it with the cluster (default with Config: operations.DiffApp, never
	// decrypting, a chart's lookup finding nothing).
	Diff func(ctx context.Context, ns, name, revision string) (*DiffResult, error)
	// Tree is the inventory of ns/name with each object's health (default:
	// operations.Tree).
	Tree func(ctx context.Context, ns, name string, children bool) ([]*TreeNode, error)
	// Events are the events of ns/name and of its objects, oldest first (default:
	// operations.Events).
	Events func(ctx context.Context, ns, name string) ([]Event, error)

	// Reconcile requests a reconcile of the object of kind (app, source, helmrepo),
	// waits for it and returns its steps, one line each (default: operations.Reconcile).
	Reconcile func(ctx context.Context, kind, ns, name string, withSource bool) (string, error)
	// Suspend sets (suspend) or clears (resume) spec.suspend and says so (default:
	// operations.SetSuspend).
	Suspend func(ctx context.Context, kind, ns, name string, suspend bool) (string, error)
	// Rollback pins ns/name to the history revision to and returns its steps (default:
	// operations.Rollback).
	Rollback func(ctx context.Context, ns, name, to string) (string, error)
}

// DiffResult is what a diff found.
type DiffResult struct {
	// From says what was rendered: "revision main@sha1:…".
	From string
	// Changes is true when a sync would create, change or prune an object.
	Changes bool
	// Report is the diff as `gitsync diff` prints it: one line per object that would
	// change, its changed fields and a unified YAML diff (Secret values masked).
	Report string
}

// TreeNode is one object of an Application's tree.
type TreeNode struct {
	Kind      string      `json:"kind"`
	Namespace string      `json:"namespace,omitempty"`
	Name      string      `json:"name"`
	Health    string      `json:"health"`
	Children  []*TreeNode `json:"children,omitempty"`
}

// Event is one Kubernetes event of an Application or of one of its objects.
type Event = operations.Event

// Server is the MCP server with gitsync's tools.
type Server struct {
	opts   Options
	server *sdk.Server
	logMu  sync.Mutex
}

// New returns a server with the read tools, and the write tools when opts.AllowWrite.
func New(opts Options) (*Server, error) {
	if opts.Client == nil {
		return nil, errors.New("mcp: a Kubernetes client is required")
	}
	if opts.Namespace == "" {
		opts.Namespace = "default"
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.Diff == nil && opts.Config == nil {
		opts.Diff = func(context.Context, string, string, string) (*DiffResult, error) {
			return nil, errors.New("diff is not available in this server")
		}
	}
	s := &Server{opts: opts}
	s.defaults()
	mode := "read-only: start it with --allow-write for reconcile, suspend, resume and rollback"
	if opts.AllowWrite {
		mode = "write tools enabled: reconcile, suspend, resume and rollback act with the user's identity"
	}
	s.server = sdk.NewServer(&sdk.Implementation{Name: "gitsync", Version: opts.Version}, &sdk.ServerOptions{
		Instructions: "gitsync keeps Kubernetes equal to Git. Applications (gsapp) render a GitRepository or " +
			"HelmRepository source. Start with list_applications, then explain_application for anything " +
			"not Ready, Synced or Healthy. Default namespace: " + opts.Namespace + ". This server is " + mode + ".",
	})
	s.addReadTools()
	if opts.AllowWrite {
		s.addWriteTools()
	}
	return s, nil
}

// Run serves one session over t until the client disconnects or ctx ends.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error {
	s.logf("gitsync mcp: serving (namespace %s, allow-write %t)", s.opts.Namespace, s.opts.AllowWrite)
	return s.server.Run(ctx, t)
}

// addTool registers a tool whose handler returns a value to show as indented JSON, or
// text as it is; every call is logged with its arguments (names and revisions only:
// no tool takes a Secret's value) and its outcome.
func addTool[In any](s *Server, t *sdk.Tool, h func(context.Context, In) (any, error)) {
	sdk.AddTool(s.server, t, func(ctx context.Context, _ *sdk.CallToolRequest, in In) (*sdk.CallToolResult, any, error) {
		start := time.Now()
		args, _ := json.Marshal(in)
		out, err := h(ctx, in)
		took := time.Since(start).Round(time.Millisecond)
		if err != nil {
			s.logf("gitsync mcp: tool=%s args=%s error=%q duration=%s", t.Name, args, err.Error(), took)
			return nil, nil, err
		}
		s.logf("gitsync mcp: tool=%s args=%s ok duration=%s", t.Name, args, took)
		text, ok := out.(string)
		if !ok {
			b, err := json.MarshalIndent(out, "", "  ")
			if err != nil {
				return nil, nil, fmt.Errorf("encoding the result: %w", err)
			}
			text = string(b)
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil, nil
	})
}

func (s *Server) logf(format string, args ...any) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	fmt.Fprintf(s.opts.Log, format+"\n", args...)
}

// ns is the namespace argument or the default one.
func (s *Server) ns(ns string) string {
	if ns == "" {
		return s.opts.Namespace
	}
	return ns
}

// readOnly and destructive annotate tools for clients that show or confirm them.
func readOnly() *sdk.ToolAnnotations { return &sdk.ToolAnnotations{ReadOnlyHint: true} }

func write(idempotent bool) *sdk.ToolAnnotations {
	f := false
	return &sdk.ToolAnnotations{DestructiveHint: &f, IdempotentHint: idempotent}
}
