package appset

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/yamlbudget"
)

// Bounds of what the Git generators read from a tenant's checkout.
const (
	// MaxWalkEntries bounds the files and directories one generator looks at.
	MaxWalkEntries = 100_000
	// MaxFileBytes bounds one file a gitFiles generator reads.
	MaxFileBytes = 1 << 20
)

// gitDirectories gives one set per directory that an include glob matches and no exclude
// glob does: path {path, basename, basenameNormalized, segments}.
func gitDirectories(g *gitsyncv1.GitDirectoriesGenerator, in Inputs) ([]Params, error) {
	root, err := checkout(in, g.SourceRef.Name)
	if err != nil {
		return nil, fmt.Errorf("gitDirectories: %w", err)
	}
	out, err := in.memo(root, g, func() ([]Params, error) { return readDirectories(root, g, in.max()) })
	if err != nil {
		return nil, fmt.Errorf("gitDirectories: %w", err)
	}
	return out, nil
}

func readDirectories(root string, g *gitsyncv1.GitDirectoriesGenerator, max int) ([]Params, error) {
	var out []Params
	err := walk(root, func(rel string, d fs.DirEntry) error {
		if !d.IsDir() || !matchAny(g.Include, rel) || matchAny(g.Exclude, rel) {
			return nil
		}
		if len(out) >= max {
			return fmt.Errorf("%w: more than %d directories", ErrTooMany, max)
		}
		out = append(out, Params{"path": pathParams(rel)})
		return nil
	})
	return out, err
}

// gitFiles gives one set per JSON or YAML file the path glob matches: the file's keys (a
// file holding a list gives one set per element) plus path {path (its directory),
// basename, basenameNormalized, filename, segments}.
func gitFiles(g *gitsyncv1.GitFilesGenerator, in Inputs) ([]Params, error) {
	root, err := checkout(in, g.SourceRef.Name)
	if err != nil {
		return nil, fmt.Errorf("gitFiles: %w", err)
	}
	out, err := in.memo(root, g, func() ([]Params, error) { return readFiles(root, g, in.max()) })
	if err != nil {
		return nil, fmt.Errorf("gitFiles: %w", err)
	}
	return out, nil
}

func readFiles(root string, g *gitsyncv1.GitFilesGenerator, max int) ([]Params, error) {
	var out []Params
	err := walk(root, func(rel string, d fs.DirEntry) error {
		if !d.Type().IsRegular() || !match(g.Path, rel) {
			return nil
		}
		sets, err := readParams(filepath.Join(root, filepath.FromSlash(rel)), rel)
		if err != nil {
			return err
		}
		dir := path.Dir(rel)
		for _, s := range sets {
			p := pathParams(dir)
			p["filename"] = path.Base(rel)
			s["path"] = p
			out = append(out, s)
		}
		if len(out) > max {
			return fmt.Errorf("%w: more than %d parameter sets", ErrTooMany, max)
		}
		return nil
	})
	return out, err
}

func checkout(in Inputs, source string) (string, error) {
	if in.Checkout == nil {
		return "", errors.New("no checkout available")
	}
	return in.Checkout(source)
}

func pathParams(rel string) map[string]any {
	segs := []any{}
	for _, s := range strings.Split(rel, "/") {
		segs = append(segs, s)
	}
	return map[string]any{"path": rel, "basename": path.Base(rel), "basenameNormalized": normalize(path.Base(rel)), "segments": segs}
}

// walk visits the entries below root (root itself and .git excluded) with their slash
// paths, never following a symbolic link, at most MaxWalkEntries of them.
func walk(root string, visit func(rel string, d fs.DirEntry) error) error {
	n := 0
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if n++; n > MaxWalkEntries {
			return fmt.Errorf("the checkout has more than %d entries", MaxWalkEntries)
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		return visit(filepath.ToSlash(rel), d)
	})
}

// readParams reads one JSON or YAML file (bounded) into parameter sets.
func readParams(file, rel string) ([]Params, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rel, err)
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", rel, MaxFileBytes)
	}
	if err := yamlbudget.Check(rel, data); err != nil {
		return nil, err
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", rel, err)
	}
	trimmed := strings.TrimSpace(string(js))
	if strings.HasPrefix(trimmed, "[") {
		var items []json.RawMessage
		if err := json.Unmarshal(js, &items); err != nil {
			return nil, fmt.Errorf("parsing %s: %w", rel, err)
		}
		var out []Params
		for i, it := range items {
			p, err := decodeObject(it)
			if err != nil {
				return nil, fmt.Errorf("%s: item %d: %w", rel, i, err)
			}
			out = append(out, p)
		}
		return out, nil
	}
	p, err := decodeObject(js)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	return []Params{p}, nil
}

func matchAny(globs []string, rel string) bool {
	for _, g := range globs {
		if match(g, rel) {
			return true
		}
	}
	return false
}

// match tells whether the slash path rel matches glob: segments as path.Match, and `**`
// matching any number of segments (none included). go-git's gitignore matcher, the kept
// library for globs, is not used: it counts a match of a parent as a match of its
// children, which a selection of directories must not.
// A glob with more than maxDoubleStars `**` matches nothing (the search is exponential in them).
func match(glob, rel string) bool {
	var segs []string
	stars := 0
	for _, s := range strings.Split(strings.Trim(glob, "/"), "/") {
		if s == "**" {
			if len(segs) > 0 && segs[len(segs)-1] == "**" {
				continue
			}
			stars++
		}
		segs = append(segs, s)
	}
	if stars > maxDoubleStars {
		return false
	}
	return matchSegs(segs, strings.Split(rel, "/"))
}

const maxDoubleStars = 3

func matchSegs(glob, segs []string) bool {
	for len(glob) > 0 {
		if glob[0] == "**" {
			for i := 0; i <= len(segs); i++ {
				if matchSegs(glob[1:], segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, err := path.Match(glob[0], segs[0]); err != nil || !ok {
			return false
		}
		glob, segs = glob[1:], segs[1:]
	}
	return len(segs) == 0
}
