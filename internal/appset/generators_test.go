package appset

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

func elements(t *testing.T, objs ...string) *gitsyncv1.ListGenerator {
	t.Helper()
	g := &gitsyncv1.ListGenerator{}
	for _, o := range objs {
		g.Elements = append(g.Elements, apiextensionsv1.JSON{Raw: []byte(o)})
	}
	return g
}

// checkoutOf writes files (path → content; a path ending in / is a directory) below a
// temporary directory and returns Inputs reading it as the source "repo".
func checkoutOf(t *testing.T, files map[string]string) Inputs {
	t.Helper()
	root := t.TempDir()
	for p, c := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return Inputs{Checkout: func(name string) (string, error) {
		if name != "repo" {
			return "", errors.New("no such source")
		}
		return root, nil
	}}
}

func names(t *testing.T, sets []Params, key string) []string {
	t.Helper()
	var out []string
	for _, s := range sets {
		v, ok := lookup(s, key)
		if !ok {
			t.Fatalf("set %v has no %s", s, key)
		}
		out = append(out, v.(string))
	}
	return out
}

func TestListGenerator(t *testing.T) {
	gens := []gitsyncv1.ApplicationSetGenerator{{ApplicationSetBaseGenerator: gitsyncv1.ApplicationSetBaseGenerator{
		List: elements(t, `{"name":"a","replicas":3,"env":{"tier":"prod"}}`, `{"name":"b"}`)}}}
	sets, err := Generate(context.Background(), gens, Inputs{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(Flatten(sets[0]), " "); got != "env.tier=prod name=a replicas=3" {
		t.Fatalf("first set = %s", got)
	}
	if len(sets) != 2 {
		t.Fatalf("%d sets, want 2", len(sets))
	}
	gens[0].List = elements(t, `"just a string"`)
	if _, err := Generate(context.Background(), gens, Inputs{}); err == nil || !strings.Contains(err.Error(), "not an object") {
		t.Fatalf("a non-object element: err = %v", err)
	}
}

func TestGitDirectoriesGenerator(t *testing.T) {
	in := checkoutOf(t, map[string]string{
		"apps/web/kustomization.yaml": "", "apps/api/kustomization.yaml": "", "apps/legacy/x.yaml": "",
		"apps/web/base/": "", "other/": "", "deep/a/b/c/": "",
	})
	gen := gitsyncv1.ApplicationSetGenerator{ApplicationSetBaseGenerator: gitsyncv1.ApplicationSetBaseGenerator{
		GitDirectories: &gitsyncv1.GitDirectoriesGenerator{SourceRef: gitsyncv1.LocalObjectReference{Name: "repo"},
			Include: []string{"apps/*"}, Exclude: []string{"apps/legacy"}}}}
	sets, err := Generate(context.Background(), []gitsyncv1.ApplicationSetGenerator{gen}, in)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names(t, sets, "path.path"), ","); got != "apps/api,apps/web" {
		t.Fatalf("directories = %s, want apps/api,apps/web (apps/web/base is deeper, apps/legacy excluded)", got)
	}
	if got := strings.Join(names(t, sets, "path.basename"), ","); got != "api,web" {
		t.Fatalf("basenames = %s", got)
	}
	gen.GitDirectories.Include, gen.GitDirectories.Exclude = []string{"**/c"}, nil
	sets, err = Generate(context.Background(), []gitsyncv1.ApplicationSetGenerator{gen}, in)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names(t, sets, "path.path"), ","); got != "deep/a/b/c" {
		t.Fatalf("** = %s", got)
	}
	gen.GitDirectories.SourceRef.Name = "missing"
	if _, err := Generate(context.Background(), []gitsyncv1.ApplicationSetGenerator{gen}, in); err == nil {
		t.Fatal("a missing checkout must be an error, not zero directories (which would delete every Application)")
	}
}

func TestGitFilesGenerator(t *testing.T) {
	in := checkoutOf(t, map[string]string{
		"clusters/prod/config.yaml":  "cluster:\n  name: prod\n  address: https://prod\nreplicas: 3\n",
		"clusters/stage/config.json": `{"cluster": {"name": "stage"}}`,
		"clusters/many/config.yaml":  "- cluster: {name: m1}\n- cluster: {name: m2}\n",
		"clusters/prod/other.txt":    "not read",
	})
	gen := gitsyncv1.ApplicationSetGenerator{ApplicationSetBaseGenerator: gitsyncv1.ApplicationSetBaseGenerator{
		GitFiles: &gitsyncv1.GitFilesGenerator{SourceRef: gitsyncv1.LocalObjectReference{Name: "repo"}, Path: "clusters/*/config.*"}}}
	sets, err := Generate(context.Background(), []gitsyncv1.ApplicationSetGenerator{gen}, in)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names(t, sets, "cluster.name"), ","); got != "m1,m2,prod,stage" {
		t.Fatalf("cluster.name = %s", got)
	}
	if got := strings.Join(names(t, sets, "path.filename"), ","); got != "config.yaml,config.yaml,config.yaml,config.json" {
		t.Fatalf("path.filename = %s", got)
	}
	if got := strings.Join(names(t, sets, "path.path"), ","); got != "clusters/many,clusters/many,clusters/prod,clusters/stage" {
		t.Fatalf("path.path = %s", got)
	}
	big := checkoutOf(t, map[string]string{"clusters/x/config.yaml": "a: " + strings.Repeat("x", MaxFileBytes)})
	if _, err := Generate(context.Background(), []gitsyncv1.ApplicationSetGenerator{gen}, big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("a file over the bound: err = %v", err)
	}
}

func cluster(name, version string, labels map[string]string) gitsyncv1.Cluster {
	c := gitsyncv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: labels}}
	c.Status.KubernetesVersion = version
	return c
}

func TestClustersMatrixAndMerge(t *testing.T) {
	in := checkoutOf(t, map[string]string{"apps/web/": "", "apps/api/": ""})
	in.Clusters = []gitsyncv1.Cluster{
		cluster("east", "v1.37.1", map[string]string{"env": "prod", "region": "east"}),
		cluster("west", "v1.36.0", map[string]string{"env": "prod", "region": "west"}),
		cluster("dev", "v1.37.1", map[string]string{"env": "dev"}),
	}
	prod := gitsyncv1.ApplicationSetBaseGenerator{Clusters: &gitsyncv1.ClustersGenerator{
		Selector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}}
	dirs := gitsyncv1.ApplicationSetBaseGenerator{GitDirectories: &gitsyncv1.GitDirectoriesGenerator{
		SourceRef: gitsyncv1.LocalObjectReference{Name: "repo"}, Include: []string{"apps/*"}}}
	m := []gitsyncv1.ApplicationSetGenerator{{Matrix: &gitsyncv1.MatrixGenerator{Generators: []gitsyncv1.ApplicationSetBaseGenerator{dirs, prod}}}}
	sets, err := Generate(context.Background(), m, in)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range sets {
		v, _ := lookup(s, "labels.region")
		got = append(got, s["path"].(map[string]any)["basename"].(string)+"@"+s["name"].(string)+"/"+v.(string)+"/"+s["kubernetesVersion"].(string))
	}
	if strings.Join(got, " ") != "api@east/east/v1.37.1 api@west/west/v1.36.0 web@east/east/v1.37.1 web@west/west/v1.36.0" {
		t.Fatalf("matrix = %v", got)
	}

	in.Max = 3
	if _, err := Generate(context.Background(), m, in); !errors.Is(err, ErrTooMany) {
		t.Fatalf("2×2 sets over a cap of 3: err = %v, want ErrTooMany", err)
	}
	in.Max = 0

	overrides := gitsyncv1.ApplicationSetBaseGenerator{List: elements(t, `{"name":"west","replicas":"5"}`, `{"name":"nowhere","replicas":"9"}`)}
	all := gitsyncv1.ApplicationSetBaseGenerator{Clusters: &gitsyncv1.ClustersGenerator{}}
	defaults := gitsyncv1.ApplicationSetBaseGenerator{List: elements(t, `{"name":"east","replicas":"1"}`, `{"name":"west","replicas":"1"}`, `{"name":"dev","replicas":"1"}`)}
	mg := []gitsyncv1.ApplicationSetGenerator{{Merge: &gitsyncv1.MergeGenerator{MergeKeys: []string{"name"},
		Generators: []gitsyncv1.ApplicationSetBaseGenerator{all, defaults, overrides}}}}
	sets, err = Generate(context.Background(), mg, in)
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	for _, s := range sets {
		got = append(got, s["name"].(string)+"="+s["replicas"].(string)+"/"+s["kubernetesVersion"].(string))
	}
	if strings.Join(got, " ") != "east=1/v1.37.1 west=5/v1.36.0 dev=1/v1.37.1" {
		t.Fatalf("merge = %v (nowhere matches no base set and is dropped)", got)
	}

	conflict := []gitsyncv1.ApplicationSetGenerator{{Matrix: &gitsyncv1.MatrixGenerator{Generators: []gitsyncv1.ApplicationSetBaseGenerator{
		{List: elements(t, `{"name":"a"}`)}, {List: elements(t, `{"name":"b"}`)}}}}}
	if _, err := Generate(context.Background(), conflict, in); err == nil || !strings.Contains(err.Error(), "name") {
		t.Fatalf("a matrix whose generators disagree on a key: err = %v", err)
	}
	two := []gitsyncv1.ApplicationSetGenerator{{ApplicationSetBaseGenerator: prod, Matrix: m[0].Matrix}}
	if _, err := Generate(context.Background(), two, in); err == nil || !strings.Contains(err.Error(), "exactly one") {
		t.Fatalf("two generators in one entry: err = %v", err)
	}
}

func TestGlob(t *testing.T) {
	for _, c := range []struct {
		glob, path string
		want       bool
	}{
		{"apps/*", "apps/web", true},
		{"apps/*", "apps/web/base", false},
		{"apps/**", "apps/web/base", true},
		{"**/base", "apps/web/base", true},
		{"**/base", "base", true},
		{"apps/*/base", "apps/web/base", true},
		{"apps/[", "apps/[", false},
		{"**/**/b/**", "a/b/x", true},             // consecutive ** are one
		{"**/a/**/b/**/c/**/x", "a/b/c/x", false}, // over the bound on **
	} {
		if got := match(c.glob, c.path); got != c.want {
			t.Errorf("match(%q, %q) = %v, want %v", c.glob, c.path, got, c.want)
		}
	}
}

// A memo of the Git generators' reads is asked with the checkout and the generator, and
// what it keeps is never changed by a merge that uses it.
func TestGitGeneratorsMemo(t *testing.T) {
	in := checkoutOf(t, map[string]string{"apps/web/": "", "apps/api/": ""})
	kept := map[string][]Params{}
	calls := 0
	in.Memo = func(key string, compute func() ([]Params, error)) ([]Params, error) {
		if s, ok := kept[key]; ok {
			return s, nil
		}
		calls++
		s, err := compute()
		kept[key] = s
		return s, err
	}
	dirs := gitsyncv1.ApplicationSetBaseGenerator{GitDirectories: &gitsyncv1.GitDirectoriesGenerator{
		SourceRef: gitsyncv1.LocalObjectReference{Name: "repo"}, Include: []string{"apps/*"}}}
	over := gitsyncv1.ApplicationSetBaseGenerator{List: elements(t, `{"path":{"basename":"web"},"replicas":"3"}`)}
	gens := []gitsyncv1.ApplicationSetGenerator{{Merge: &gitsyncv1.MergeGenerator{MergeKeys: []string{"path.basename"},
		Generators: []gitsyncv1.ApplicationSetBaseGenerator{dirs, over}}}}
	for range 2 {
		sets, err := Generate(context.Background(), gens, in)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(Flatten(sets[1]), " "); !strings.Contains(got, "replicas=3") {
			t.Fatalf("merged set = %s", got)
		}
	}
	if calls != 1 {
		t.Fatalf("the checkout was read %d times, want 1", calls)
	}
	for _, s := range kept {
		for _, p := range s {
			if _, ok := p["replicas"]; ok {
				t.Fatal("a merge changed the memo's sets")
			}
		}
	}
}
