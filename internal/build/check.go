package build

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

var (
	// ErrRemoteNotAllowed is wrapped by the error for a remote base or resource.
	ErrRemoteNotAllowed = errors.New("remote resources are not allowed")
	// ErrPluginsDisabled is wrapped by the error for a kustomization that needs a
	// plugin: helm charts, exec plugins or KRM functions.
	ErrPluginsDisabled = errors.New("kustomize plugins are disabled")
)

// functionAnnotations mark a generator or transformer config as a KRM function.
var functionAnnotations = []string{"config.kubernetes.io/function", "config.k8s.io/function"}

// helmKeys are the kustomization fields that inflate helm charts.
var helmKeys = []string{"helmCharts", "helmGlobals", "helmChartInflationGenerator"}

// loaderKeys are the fields of kustomizations and builtin plugin configs whose values
// kustomize hands to its loader, which fetches http(s) URLs and clones git URLs.
var loaderKeys = map[string]bool{
	"resources": true, "bases": true, "components": true,
	"generators": true, "transformers": true, "validators": true,
	"crds": true, "configurations": true, "patchesStrategicMerge": true,
	"path": true, "paths": true, // patches, patchesJson6902, replacements, openapi, plugin configs
	"files": true, "envs": true, "env": true, // configMapGenerator, secretGenerator
	"valuesFile": true, "additionalValuesFiles": true, "argsFromFile": true, "targetFilePath": true,
}

// schemeRE matches a URL scheme; scpRE matches git's scp-like "user@host:path".
var (
	schemeRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*://`)
	scpRE    = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9-]*@[^/:]+[:/]`)
)

// isRemote reports whether kustomize would fetch ref over the network (or clone it):
// any URL, a "git::" or "gh:" reference, github.com/org/repo and git@host:path.
// This is a superset of what kustomize's loader treats as remote (a git clone for
// bases and resources, an HTTP GET for files), which has no switch to turn it off.
// Inline content (a patch written in the kustomization) spans lines and is not a
// reference.
func isRemote(ref string) bool {
	ref = strings.TrimSpace(ref)
	if ref == "" || strings.Contains(ref, "\n") {
		return false
	}
	lower := strings.ToLower(ref)
	for _, prefix := range []string{"git::", "gh:", "github.com/", "github.com:"} {
		if strings.HasPrefix(lower, prefix) {
			return true
		}
	}
	return schemeRE.MatchString(ref) || scpRE.MatchString(ref)
}

// checker reads every kustomization a build would load, starting from the build's
// directory, before kustomize runs, and refuses what must not happen: remote bases
// and resources (kustomize would reach the network before any file system check),
// helm charts, exec plugins and KRM functions (those are also off in the plugin
// config; checking here gives a clear message naming the file). Local references
// leaving the checkout are refused here too, with the kustomization that made them.
type checker struct {
	fs    filesys.FileSystem // confined to root
	root  string
	seen  map[visit]bool
	edges map[string][]string // kustomization directory -> the directories it refers to
}

// visit is a directory checked as a kustomization or as a source of plugin configs.
type visit struct {
	dir    string
	plugin bool
}

func newChecker(fsys filesys.FileSystem, root string) *checker {
	return &checker{fs: fsys, root: root, seen: map[visit]bool{}, edges: map[string][]string{}}
}

// kustomizationFile returns the kustomization file in dir, or "" if there is none.
// It looks at the names only (a symlink counts, wherever it points), so that a
// kustomization linked from outside the checkout is refused when it is read rather
// than taken for a plain directory.
func kustomizationFile(dir string) string {
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		p := filepath.Join(dir, name)
		if fi, err := os.Lstat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	return ""
}

// dir checks the kustomization in dir (an absolute path, symlinks resolved) and,
// recursively, the local kustomizations it refers to. plugin is set for directories
// used as generators or transformers, whose resources are plugin configs.
func (c *checker) dir(dir string, plugin bool) error {
	if c.seen[visit{dir, plugin}] {
		return nil
	}
	c.seen[visit{dir, plugin}] = true
	kfile := kustomizationFile(dir)
	if kfile == "" {
		return nil // kustomize reports the missing kustomization itself
	}
	name := relToRoot(c.root, kfile)
	data, err := c.fs.ReadFile(kfile)
	if err != nil {
		return fmt.Errorf("reading %s: %w", name, err)
	}
	var k map[string]any
	if err := yaml.Unmarshal(data, &k); err != nil {
		return fmt.Errorf("parsing %s: %w", name, redactError(err))
	}
	for _, key := range helmKeys {
		if _, ok := k[key]; ok {
			return fmt.Errorf("%s: %s: helm charts are not inflated: %w", name, key, ErrPluginsDisabled)
		}
	}
	// Anything below may be a kustomization directory, which kustomize loads (or
	// clones, for a git URL) in its turn.
	for _, key := range []string{"resources", "bases", "components"} {
		for _, entry := range stringsOf(k[key]) {
			if err := c.entry(name, key, dir, entry, plugin); err != nil {
				return err
			}
		}
	}
	for _, key := range []string{"generators", "transformers", "validators"} {
		for _, entry := range stringsOf(k[key]) {
			if strings.Contains(entry, "\n") { // an inline plugin config
				if err := c.pluginConfigs(name+": "+key, []byte(entry)); err != nil {
					return err
				}
				continue
			}
			if err := c.entry(name, key, dir, entry, true); err != nil {
				return err
			}
		}
	}
	return c.remoteFields(name, k)
}

// entry checks one reference of the kustomization name (in dir) under key.
func (c *checker) entry(name, key, dir, entry string, plugin bool) error {
	if isRemote(entry) {
		return fmt.Errorf("%s: %s: %w: %q", name, key, ErrRemoteNotAllowed, entry)
	}
	p, isDir, err := c.local(dir, entry)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", name, key, err)
	}
	switch {
	case p == "":
		return nil // missing: kustomize reports it
	case isDir:
		c.edges[dir] = append(c.edges[dir], p)
		return c.dir(p, plugin)
	case plugin:
		data, err := c.fs.ReadFile(p)
		if err != nil {
			return fmt.Errorf("%s: %s: reading %s: %w", name, key, relToRoot(c.root, p), err)
		}
		return c.pluginConfigs(relToRoot(c.root, p), data)
	}
	return nil
}

// local resolves entry relative to dir. It returns "" for a path that does not
// exist, and an *OutsideError for one that resolves outside the checkout.
func (c *checker) local(dir, entry string) (string, bool, error) {
	p := filepath.FromSlash(entry)
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	p = filepath.Clean(p)
	if !within(c.root, p) {
		return "", false, &OutsideError{Path: relToRoot(c.root, p)}
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", false, nil
	}
	if !within(c.root, real) {
		return "", false, &OutsideError{Path: relToRoot(c.root, p)}
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", false, nil
	}
	return real, fi.IsDir(), nil
}

// pluginConfigs checks the generator or transformer configs in data (from name):
// each must be a builtin one (apiVersion "builtin"), not a KRM function, not helm,
// and must not load anything remote.
func (c *checker) pluginConfigs(name string, data []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("parsing %s: %w", name, redactError(err))
		}
		if doc == nil {
			continue
		}
		apiVersion, _ := doc["apiVersion"].(string)
		kind, _ := doc["kind"].(string)
		meta, _ := doc["metadata"].(map[string]any)
		objName, _ := meta["name"].(string)
		annotations, _ := meta["annotations"].(map[string]any)
		what := fmt.Sprintf("%s %s %q", name, kind, objName)
		for _, a := range functionAnnotations {
			if _, ok := annotations[a]; ok {
				return fmt.Errorf("%s: KRM functions do not run: %w", what, ErrPluginsDisabled)
			}
		}
		if apiVersion != "builtin" {
			return fmt.Errorf("%s: only builtin generators and transformers run (apiVersion: builtin), exec plugins do not: %w", what, ErrPluginsDisabled)
		}
		if kind == "HelmChartInflationGenerator" {
			return fmt.Errorf("%s: helm charts are not inflated: %w", what, ErrPluginsDisabled)
		}
		if err := c.remoteFields(name, doc); err != nil {
			return err
		}
	}
}

// remoteFields refuses remote references under loaderKeys anywhere in v.
func (c *checker) remoteFields(name string, v any) error {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if loaderKeys[k] {
				for _, s := range stringsOf(v[k]) {
					_, file, _ := strings.Cut(s, "=") // files: ["key=path"]
					if isRemote(s) || isRemote(file) {
						return fmt.Errorf("%s: %s: %w: %q", name, k, ErrRemoteNotAllowed, s)
					}
				}
			}
			if err := c.remoteFields(name, v[k]); err != nil {
				return err
			}
		}
	case map[any]any: // a mapping with a non-string key somewhere
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[fmt.Sprint(k)] = x
		}
		return c.remoteFields(name, m)
	case []any:
		for _, item := range v {
			if err := c.remoteFields(name, item); err != nil {
				return err
			}
		}
	}
	return nil
}

// stringsOf returns v if it is a string, or the strings in v if it is a list.
func stringsOf(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, item := range v {
			if s, ok := item.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
