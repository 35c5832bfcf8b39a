package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gitsync-dev/gitsync/internal/scheme"
)

// lockedBuffer is a log safe for the server's goroutines and the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// calls records what the write functions were asked to do.
type calls struct {
	mu  sync.Mutex
	got []string
}

func (c *calls) add(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, s)
}

// connect serves opts in process and returns a connected client session.
func connect(t *testing.T, opts Options) *sdk.ClientSession {
	t.Helper()
	app := healthyApp()
	app.Spec.PinnedRevision = "main@sha1:" + strings.Repeat("1", 40)
	opts.Client = fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(app).Build()
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	st, ct := sdk.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, st) }()
	session, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = session.Close()
		cancel()
		<-done
	})
	return session
}

func names(t *testing.T, s *sdk.ClientSession) []string {
	t.Helper()
	res, err := s.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tool := range res.Tools {
		out = append(out, tool.Name)
	}
	return out
}

func text(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

var writeToolNames = []string{"reconcile", "suspend", "resume", "rollback_application"}

func TestReadOnlyServerHasNoWriteTools(t *testing.T) {
	log := &lockedBuffer{}
	s := connect(t, Options{Namespace: "team", Log: log})
	got := names(t, s)
	for _, w := range writeToolNames {
		if slices.Contains(got, w) {
			t.Errorf("read-only server lists %s: %v", w, got)
		}
	}
	if !slices.Contains(got, "explain_application") || len(got) != 9 {
		t.Errorf("tools = %v, want the 9 read tools", got)
	}
	_, err := s.CallTool(context.Background(), &sdk.CallToolParams{Name: "suspend", Arguments: map[string]any{"name": "web"}})
	if err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Errorf("calling suspend read-only: err = %v, want unknown tool", err)
	}

	// The namespace defaults to the kubeconfig's (the end-to-end test in internal/cli
	// checks managedFields, which this client does not keep).
	res, err := s.CallTool(context.Background(), &sdk.CallToolParams{Name: "list_applications", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("list_applications: %v %s", err, text(res))
	}
	var rows []Status
	if err := json.Unmarshal([]byte(text(res)), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Name != "web" || rows[0].Ready != "True" || rows[0].Sync != "Synced" || rows[0].Pinned == "" {
		t.Errorf("rows = %+v", rows)
	}
	res, err = s.CallTool(context.Background(), &sdk.CallToolParams{Name: "get_application", Arguments: map[string]any{"name": "web"}})
	if err != nil || res.IsError || !strings.Contains(text(res), `"kind": "Application"`) {
		t.Errorf("get_application: %v %s", err, text(res))
	}
	// A server without the CLI's diff says so instead of failing the session.
	res, err = s.CallTool(context.Background(), &sdk.CallToolParams{Name: "diff_application", Arguments: map[string]any{"name": "web"}})
	if err != nil || !res.IsError || !strings.Contains(text(res), "diff is not available") {
		t.Errorf("diff_application without Diff: %v %s", err, text(res))
	}
	if l := log.String(); !strings.Contains(l, `tool=get_application args={"name":"web"} ok`) || !strings.Contains(l, "allow-write false") {
		t.Errorf("log = %q", l)
	}
}

func TestWriteToolsCallTheInjectedFunctions(t *testing.T) {
	log := &lockedBuffer{}
	rec := &calls{}
	s := connect(t, Options{Namespace: "team", Log: log, AllowWrite: true,
		Reconcile: func(_ context.Context, kind, ns, name string, withSource bool) (string, error) {
			rec.add(strings.Join([]string{"reconcile", kind, ns, name}, " "))
			if name == "locked" {
				return "", errors.New(`applications.gitsync.dev "locked" is forbidden: User "bob" cannot patch resource "applications"`)
			}
			return "✔ Application team/web: applied revision r1\n", nil
		},
		Suspend: func(_ context.Context, kind, ns, name string, suspend bool) (string, error) {
			rec.add(strings.Join([]string{"suspend", kind, ns, name}, " ") + map[bool]string{true: " on", false: " off"}[suspend])
			return "", nil
		},
		Rollback: func(_ context.Context, ns, name, to string) (string, error) {
			rec.add(strings.Join([]string{"rollback", ns, name, to}, " "))
			return "", nil
		},
	})
	if got := names(t, s); !slices.Contains(got, "reconcile") || len(got) != 13 {
		t.Fatalf("tools = %v, want 9 read and 4 write tools", got)
	}
	call := func(tool string, args map[string]any) *sdk.CallToolResult {
		t.Helper()
		res, err := s.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		return res
	}
	if res := call("reconcile", map[string]any{"name": "web"}); res.IsError || text(res) != "✔ Application team/web: applied revision r1\n" {
		t.Errorf("reconcile: %s", text(res))
	}
	res := call("reconcile", map[string]any{"name": "locked", "namespace": "other"})
	if !res.IsError || !strings.Contains(text(res), "forbidden") {
		t.Errorf("reconcile of a forbidden object: isError %t, %s", res.IsError, text(res))
	}
	call("suspend", map[string]any{"name": "repo", "kind": "GitRepository"})
	call("resume", map[string]any{"name": "web"})
	call("rollback_application", map[string]any{"name": "web", "to": "0123abc"})
	if res := call("suspend", map[string]any{"name": "web", "kind": "Pod"}); !res.IsError {
		t.Errorf("suspend of a Pod: want an error, got %s", text(res))
	}
	want := []string{"reconcile app team web", "reconcile app other locked", "suspend source team repo on", "suspend app team web off", "rollback team web 0123abc"}
	if !slices.Equal(rec.got, want) {
		t.Errorf("calls = %q, want %q", rec.got, want)
	}
	if l := log.String(); !strings.Contains(l, `tool=reconcile args={"namespace":"other","name":"locked"} error="applications.gitsync.dev`) ||
		!strings.Contains(l, `tool=rollback_application args={"name":"web","to":"0123abc"} ok`) {
		t.Errorf("log = %q", l)
	}
}

// Without injected write functions, the write tools are internal/operations over the
// server's client (the end-to-end test in internal/cli drives them against a cluster).
func TestWriteToolsDefaultToTheOperations(t *testing.T) {
	s := connect(t, Options{Namespace: "team", AllowWrite: true})
	if got := names(t, s); !slices.Contains(got, "rollback_application") || len(got) != 13 {
		t.Fatalf("tools = %v, want 9 read and 4 write tools", got)
	}
	res, err := s.CallTool(context.Background(), &sdk.CallToolParams{Name: "suspend", Arguments: map[string]any{"name": "web"}})
	if err != nil || res.IsError || text(res) != "Application team/web suspended\n" {
		t.Fatalf("suspend: %v %s", err, text(res))
	}
	res, err = s.CallTool(context.Background(), &sdk.CallToolParams{Name: "reconcile", Arguments: map[string]any{"name": "web"}})
	if err != nil || !res.IsError || !strings.Contains(text(res), "Application team/web is suspended: resume it first") {
		t.Fatalf("reconcile of a suspended Application: %v %s", err, text(res))
	}
}
