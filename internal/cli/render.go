package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/operations"
	"github.com/gitsync-dev/gitsync/internal/render"
)

// rendered is an Application's objects and where they came from.
type rendered = operations.Rendered

// addLookupFlag is --lookup of diff and build.
func addLookupFlag(cmd *cobra.Command, lookup *bool) {
	cmd.Flags().BoolVar(lookup, "lookup", false,
		"let a chart's lookup read the cluster with your rights (default: lookup finds nothing; a tenant's chart could otherwise read what you may and the Application may not)")
}

// renderLocal renders dir (the directory to render, in place of spec.path), confined to
// the Git worktree that holds dir (so an overlay may use ../base), or to dir itself.
// Without decrypt, SOPS-encrypted content is left encrypted (render.Source.KeepEncrypted).
func renderLocal(ctx context.Context, local localPath, app *gitsyncv1.Application, cluster *render.Cluster, decrypt bool) (*rendered, error) {
	dir := local.Dir
	if app.MultiSource() {
		return nil, fmt.Errorf("--path %s renders one source in place of spec.path: Application %s/%s has spec.sources (diff it without --path)", dir, app.Namespace, app.Name)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("resolving --path %s: %w", dir, err)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("--path %s is not a directory", dir)
	}
	root := worktreeRoot(abs)
	if local.Root != "" {
		if root, err = filepath.Abs(local.Root); err != nil {
			return nil, fmt.Errorf("resolving --root %s: %w", local.Root, err)
		}
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, fmt.Errorf("--path %s is not inside --root %s", dir, local.Root)
	}
	res, err := render.Render(ctx, app, render.Source{Root: root, Path: "./" + filepath.ToSlash(rel), KeepEncrypted: !decrypt}, cluster)
	if err != nil {
		return nil, fmt.Errorf("building %s: %w", dir, err)
	}
	return operations.NewRendered(res, "local path "+dir), nil
}

// localPath is a directory to render in place of the source's revision (--path), and
// the root the render is confined to (--root; "": the Git worktree holding Dir, else Dir).
type localPath struct{ Dir, Root string }

// worktreeRoot returns the nearest directory at or above dir holding .git, or dir.
func worktreeRoot(dir string) string {
	for d := dir; ; {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return dir
		}
		d = parent
	}
}

// readApplication reads the Application called name from a YAML/JSON file (which may
// hold several documents); an empty name takes the first Application.
func readApplication(file, name string) (*gitsyncv1.Application, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading --from-file: %w", err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("decoding %s: %w", file, err)
		}
		if doc["kind"] != gitsyncv1.ApplicationKind {
			continue
		}
		raw, err := yaml.Marshal(doc)
		if err != nil {
			return nil, fmt.Errorf("decoding %s: %w", file, err)
		}
		app := &gitsyncv1.Application{}
		if err := yaml.UnmarshalStrict(raw, app); err != nil {
			return nil, fmt.Errorf("decoding the Application in %s: %w", file, err)
		}
		if name == "" || app.Name == name {
			return app, nil
		}
	}
	return nil, fmt.Errorf("%s holds no Application named %q", file, name)
}
