package build

import (
	"errors"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
)

// recorder is a Filter that records what it sees and upper-cases "secret: x" lines.
type recorder struct {
	mu   sync.Mutex
	seen []string
}

func (r *recorder) filter(rel string, data []byte) ([]byte, error) {
	r.mu.Lock()
	r.seen = append(r.seen, rel)
	r.mu.Unlock()
	if strings.Contains(rel, "poison") {
		return nil, errors.New("refused by the filter")
	}
	return []byte(strings.ReplaceAll(string(data), "sealed", "opened")), nil
}

// The filter sees every file of a build — kustomizations, resources, patches,
// generator inputs, plain manifests — by its path in the checkout, and what it returns
// is what the build uses; its error fails the build. It never sees a file outside.
func TestBuildFilter(t *testing.T) {
	root, _ := checkoutAndOutside(t)
	writeFiles(t, root, map[string]string{
		"k/kustomization.yaml": "resources: [cm.yaml]\npatches: [{path: patch.yaml}]\n" +
			"secretGenerator: [{name: gen, envs: [app.env]}]\ngeneratorOptions: {disableNameSuffixHash: true}\n",
		"k/cm.yaml":                 "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {v: sealed}\n",
		"k/patch.yaml":              "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {p: sealed}\n",
		"k/app.env":                 "K=sealed\n",
		"p/a.yaml":                  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {v: sealed}\n",
		"bad/poison.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
		"escape/kustomization.yaml": "resources: [../../outside/secret.yaml]\n",
	})
	r := &recorder{}
	objs, err := BuildWith(root, "k", Options{Filter: r.filter})
	if err != nil {
		t.Fatal(err)
	}
	var cm, gen map[string]any
	for _, o := range objs {
		switch o.GetName() {
		case "cm":
			cm = o.Object["data"].(map[string]any)
		case "gen":
			gen = o.Object["data"].(map[string]any)
		}
	}
	if cm["v"] != "opened" || cm["p"] != "opened" || gen["K"] != "b3BlbmVk" { // base64 "opened"
		t.Fatalf("the build did not use the filtered files: %v %v", cm, gen)
	}
	sort.Strings(r.seen)
	for _, want := range []string{"k/app.env", "k/cm.yaml", "k/kustomization.yaml", "k/patch.yaml"} {
		if i := sort.SearchStrings(r.seen, want); i == len(r.seen) || r.seen[i] != want {
			t.Errorf("the filter did not see %s (saw %v)", want, r.seen)
		}
	}

	objs, err = BuildWith(root, "p", Options{Filter: r.filter})
	if err != nil || objs[0].Object["data"].(map[string]any)["v"] != "opened" {
		t.Fatalf("plain: %v %v", err, objs)
	}
	if _, err := BuildWith(root, "bad", Options{Filter: r.filter}); err == nil || !strings.Contains(err.Error(), "refused by the filter") {
		t.Fatalf("a filter error: %v", err)
	}
	r.seen = nil
	if _, err := BuildWith(root, "escape", Options{Filter: r.filter}); !errors.Is(err, ErrOutsideCheckout) {
		t.Fatalf("escape: %v", err)
	}
	for _, s := range r.seen {
		if strings.Contains(s, "outside") || strings.HasPrefix(s, "..") || filepath.IsAbs(s) {
			t.Fatalf("the filter saw %s, outside the checkout", s)
		}
	}
}
