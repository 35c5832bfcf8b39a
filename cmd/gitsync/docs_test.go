package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/shlex"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitsync-dev/gitsync/internal/cli"
)

// The docs' checks: the field reference is what the Go types generate, every gitsync
// command line in a shell block parses with the real command tree, and every manifest is
// accepted by a real API server with gitsync's CRDs.

const repoRoot = "../.."

// crdRefDocs is the pinned generator of docs/spec/v1beta1/reference.md (`make docs`).
const crdRefDocs = "github.com/elastic/crd-ref-docs@v0.3.0"

func TestAPIReferenceIsCurrent(t *testing.T) {
	out := filepath.Join(t.TempDir(), "reference.md")
	cmd := exec.Command("go", "run", crdRefDocs,
		"--source-path="+filepath.Join(repoRoot, "api/v1beta1"),
		"--config="+filepath.Join(repoRoot, "hack/docs/crd-ref-docs.yaml"),
		"--renderer=markdown", "--output-path="+out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, b)
	}
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(repoRoot, "docs/spec/v1beta1/reference.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("docs/spec/v1beta1/reference.md is stale: run `make docs` (it differs from what %s generates from api/v1beta1)", crdRefDocs)
	}
}

// docFiles are the Markdown files a user reads: the README, docs/, bench/ and the changelog.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{filepath.Join(repoRoot, "README.md"), filepath.Join(repoRoot, "CHANGELOG.md")}
	for _, dir := range []string{"docs", "bench"} {
		err := filepath.WalkDir(filepath.Join(repoRoot, dir), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
				files = append(files, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	sort.Strings(files)
	return files
}

// block is a fenced code block of a Markdown file.
type block struct {
	file, lang string
	line       int // of the block's first line of content
	text       string
}

func codeBlocks(t *testing.T) []block {
	t.Helper()
	var blocks []block
	for _, f := range docFiles(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var cur *block
		var body strings.Builder
		sc := bufio.NewScanner(bytes.NewReader(data))
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			trimmed := strings.TrimSpace(line)
			switch {
			case cur == nil && strings.HasPrefix(trimmed, "```"):
				rel, _ := filepath.Rel(repoRoot, f)
				cur = &block{file: rel, lang: strings.TrimPrefix(trimmed, "```"), line: n + 1}
				body.Reset()
			case cur != nil && trimmed == "```":
				cur.text = body.String()
				blocks = append(blocks, *cur)
				cur = nil
			case cur != nil:
				body.WriteString(line)
				body.WriteByte('\n')
			}
		}
	}
	return blocks
}

var (
	// commandSeparator ends one command of a shell line: ||, &&, | or ;.
	commandSeparator = regexp.MustCompile(`\s(\|\||&&|\||;)\s`)
	// assignment is a leading VAR=value of a command.
	assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
)

// commandLines are the gitsync invocations of the shell blocks, one per command: a
// line's pipes, `&&`, `;` and redirections end it, its comment is dropped, and leading
// VAR=value assignments are skipped.
func commandLines(b block) [][]string {
	var cmds [][]string
	for _, line := range strings.Split(b.text, "\n") {
		line = strings.TrimSpace(line)
		if b.lang != "sh" { // a transcript: only the lines after a prompt are commands
			var ok bool
			if line, ok = strings.CutPrefix(line, "$ "); !ok {
				continue
			}
		}
		for _, part := range commandSeparator.Split(line, -1) {
			words, err := shlex.Split(part)
			if err != nil {
				continue // unbalanced quotes belong to a line that is not a gitsync command
			}
			for len(words) > 0 && assignment.MatchString(words[0]) {
				words = words[1:]
			}
			if len(words) == 0 || (words[0] != "gitsync" && words[0] != "bin/gitsync") {
				continue
			}
			var args []string
			for _, w := range words[1:] {
				if strings.HasPrefix(w, ">") || strings.HasPrefix(w, "2>") || w == "\\" {
					break
				}
				args = append(args, w)
			}
			cmds = append(cmds, args)
		}
	}
	return cmds
}

func TestDocsCommandsParse(t *testing.T) {
	checked := 0
	for _, b := range codeBlocks(t) {
		if b.lang != "sh" && b.lang != "" && b.lang != "console" {
			continue
		}
		for _, args := range commandLines(b) {
			checked++
			if err := parses(args); err != nil {
				t.Errorf("%s:%d: gitsync %s: %v", b.file, b.line, strings.Join(args, " "), err)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d gitsync command lines found in the docs' shell blocks: the scan is broken", checked)
	}
	t.Logf("%d gitsync command lines parsed", checked)
}

// parses finds args' command in a fresh command tree and checks its flags and arguments
// as cobra would before running it.
func parses(args []string) error {
	root := newRoot(cli.Streams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
	cmd, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	if cmd == root && len(args) > 0 {
		return fmt.Errorf("unknown command %q", args[0])
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return err
	}
	if cmd.Runnable() {
		return cmd.ValidateArgs(cmd.Flags().Args())
	}
	return errors.New("not a runnable command")
}

// Every manifest in the docs (a YAML document with apiVersion, kind and a name) is
// accepted by a real API server with gitsync's CRDs, as a server-side dry-run create.
func TestDocsManifestsAreAccepted(t *testing.T) {
	ctx := context.Background()
	checked := 0
	for _, b := range codeBlocks(t) {
		if b.lang != "yaml" {
			continue
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(b.text), 4096)
		for {
			var u unstructured.Unstructured
			err := dec.Decode(&u.Object)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Errorf("%s:%d: not YAML: %v", b.file, b.line, err)
				break
			}
			if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
				continue // a fragment (a spec or a status), not a manifest
			}
			checked++
			if u.GetNamespace() != "" {
				ensureNamespace(t, ctx, u.GetNamespace())
			} else if namespaced(u.GetAPIVersion()) {
				u.SetNamespace("default")
			}
			if err := env.Client.Create(ctx, &u, client.DryRunAll); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Errorf("%s:%d: %s %s refused: %v", b.file, b.line, u.GetKind(), u.GetName(), err)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d manifests found in the docs: the scan is broken", checked)
	}
	t.Logf("%d manifests accepted", checked)
}

// namespaced tells the kinds of the docs' manifests that live in a namespace: all of
// gitsync's, and the core ones the docs show.
func namespaced(apiVersion string) bool {
	return strings.HasPrefix(apiVersion, "gitsync.dev/") || apiVersion == "v1" || strings.HasPrefix(apiVersion, "apps/")
}

func ensureNamespace(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("namespace %s: %v", name, err)
	}
}

// Every relative link of the docs (outside code blocks) names a file that exists.
func TestDocsLinksResolve(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	fence := regexp.MustCompile("(?s)```.*?```")
	checked := 0
	for _, f := range docFiles(t) {
		if strings.HasSuffix(f, filepath.Join("spec", "v1beta1", "reference.md")) {
			continue // generated: its links are anchors and kubernetes.io
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(fence.ReplaceAllString(string(data), ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			checked++
			if _, err := os.Stat(filepath.Join(filepath.Dir(f), target)); err != nil {
				rel, _ := filepath.Rel(repoRoot, f)
				t.Errorf("%s: link %s: %v", rel, m[1], err)
			}
		}
	}
	if checked < 30 {
		t.Fatalf("only %d relative links found in the docs: the scan is broken", checked)
	}
}
