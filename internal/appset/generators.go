package appset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// ErrTooMany is returned when the generators would make more parameter sets than the cap.
var ErrTooMany = errors.New("too many parameter sets")

// Inputs is what the generators read beyond the spec.
type Inputs struct {
	// Checkout returns the directory of the current checkout of the named GitRepository
	// in the set's namespace.
	Checkout func(source string) (string, error)
	// Clusters are the Clusters of the set's namespace.
	Clusters []gitsyncv1.Cluster
	// PullRequests lists the open pull requests of a pullRequest generator; nil: the
	// generator is not available.
	PullRequests func(ctx context.Context, gen *gitsyncv1.PullRequestGenerator) ([]Params, error)
	// Max caps the parameter sets (and so the Applications); 0: MaxGeneratedApplications.
	Max int
	// Memo, when set, keeps what a Git generator read of a checkout: key names the
	// checkout and the generator; compute reads it. Nil: read every time.
	Memo func(key string, compute func() ([]Params, error)) ([]Params, error)
}

// memo runs compute through in.Memo under the generator g read from dir; the caller gets
// its own slice (the sets themselves are never changed after they are made).
func (in Inputs) memo(dir string, g any, compute func() ([]Params, error)) ([]Params, error) {
	if in.Memo == nil {
		return compute()
	}
	spec, err := json.Marshal(g)
	if err != nil {
		return compute()
	}
	sets, err := in.Memo(dir+"\x00"+string(spec), compute)
	return append([]Params(nil), sets...), err
}

func (in Inputs) max() int {
	if in.Max > 0 {
		return in.Max
	}
	return gitsyncv1.MaxGeneratedApplications
}

// Generate runs the generators and returns their parameter sets, concatenated.
func Generate(ctx context.Context, gens []gitsyncv1.ApplicationSetGenerator, in Inputs) ([]Params, error) {
	var out []Params
	for i := range gens {
		sets, err := generate(ctx, &gens[i], in)
		if err != nil {
			return nil, fmt.Errorf("generators[%d]: %w", i, err)
		}
		out = append(out, sets...)
		if len(out) > in.max() {
			return nil, fmt.Errorf("%w: more than %d", ErrTooMany, in.max())
		}
	}
	return out, nil
}

func generate(ctx context.Context, g *gitsyncv1.ApplicationSetGenerator, in Inputs) ([]Params, error) {
	n := 0
	for _, set := range []bool{g.List != nil, g.GitDirectories != nil, g.GitFiles != nil, g.Clusters != nil,
		g.PullRequest != nil, g.Matrix != nil, g.Merge != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return nil, fmt.Errorf("exactly one generator per entry, found %d", n)
	}
	switch {
	case g.Matrix != nil:
		return matrix(ctx, g.Matrix, in)
	case g.Merge != nil:
		return mergeGen(ctx, g.Merge, in)
	}
	return base(ctx, &g.ApplicationSetBaseGenerator, in)
}

func base(ctx context.Context, g *gitsyncv1.ApplicationSetBaseGenerator, in Inputs) ([]Params, error) {
	switch {
	case g.List != nil:
		return list(g.List, in.max())
	case g.GitDirectories != nil:
		return gitDirectories(g.GitDirectories, in)
	case g.GitFiles != nil:
		return gitFiles(g.GitFiles, in)
	case g.Clusters != nil:
		return clusters(g.Clusters, in.Clusters)
	case g.PullRequest != nil:
		if in.PullRequests == nil {
			return nil, errors.New("pullRequest: this gitsync has no pull request generator")
		}
		return in.PullRequests(ctx, g.PullRequest)
	}
	return nil, errors.New("exactly one generator per entry, found none (matrix and merge take list, gitDirectories, gitFiles, clusters or pullRequest)")
}

// list decodes the literal elements: each must be an object.
func list(g *gitsyncv1.ListGenerator, max int) ([]Params, error) {
	if len(g.Elements) > max {
		return nil, fmt.Errorf("list: %w: %d elements, at most %d", ErrTooMany, len(g.Elements), max)
	}
	out := make([]Params, 0, len(g.Elements))
	for i, e := range g.Elements {
		p, err := decodeObject(e.Raw)
		if err != nil {
			return nil, fmt.Errorf("list: elements[%d]: %w", i, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// decodeObject decodes a JSON object with numbers kept as written.
func decodeObject(raw []byte) (Params, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("not an object: %w", err)
	}
	return Params(m), nil
}

// clusters gives name, namespace, labels and kubernetesVersion of each selected Cluster.
func clusters(g *gitsyncv1.ClustersGenerator, all []gitsyncv1.Cluster) ([]Params, error) {
	sel, err := metav1.LabelSelectorAsSelector(&g.Selector)
	if err != nil {
		return nil, fmt.Errorf("clusters: selector: %w", err)
	}
	var out []Params
	for i := range all {
		c := &all[i]
		if !sel.Matches(labels.Set(c.Labels)) {
			continue
		}
		ls := map[string]any{}
		for k, v := range c.Labels {
			ls[k] = v
		}
		out = append(out, Params{"name": c.Name, "nameNormalized": normalize(c.Name), "namespace": c.Namespace,
			"labels": ls, "kubernetesVersion": c.Status.KubernetesVersion})
	}
	return out, nil
}

// matrix makes every combination of its two generators' sets.
func matrix(ctx context.Context, g *gitsyncv1.MatrixGenerator, in Inputs) ([]Params, error) {
	if len(g.Generators) != 2 {
		return nil, fmt.Errorf("matrix: exactly 2 generators, found %d", len(g.Generators))
	}
	a, err := base(ctx, &g.Generators[0], in)
	if err != nil {
		return nil, fmt.Errorf("matrix: generators[0]: %w", err)
	}
	b, err := base(ctx, &g.Generators[1], in)
	if err != nil {
		return nil, fmt.Errorf("matrix: generators[1]: %w", err)
	}
	if len(a)*len(b) > in.max() {
		return nil, fmt.Errorf("matrix: %w: %d × %d sets, at most %d", ErrTooMany, len(a), len(b), in.max())
	}
	out := make([]Params, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			p, err := combine(x, y)
			if err != nil {
				return nil, fmt.Errorf("matrix: parameter %w", err)
			}
			out = append(out, p)
		}
	}
	return out, nil
}

// mergeGen lays the sets of the later generators over the first's sets that have the
// same values of mergeKeys; later sets that match no base set are dropped.
func mergeGen(ctx context.Context, g *gitsyncv1.MergeGenerator, in Inputs) ([]Params, error) {
	if len(g.Generators) < 2 || len(g.MergeKeys) == 0 {
		return nil, errors.New("merge: at least 2 generators and 1 merge key")
	}
	out, err := base(ctx, &g.Generators[0], in)
	if err != nil {
		return nil, fmt.Errorf("merge: generators[0]: %w", err)
	}
	for i := 1; i < len(g.Generators); i++ {
		sets, err := base(ctx, &g.Generators[i], in)
		if err != nil {
			return nil, fmt.Errorf("merge: generators[%d]: %w", i, err)
		}
		byKey := map[string]Params{}
		for _, s := range sets {
			if k, ok := mergeKey(s, g.MergeKeys); ok {
				byKey[k] = merge(byKey[k], s)
			}
		}
		for j, s := range out {
			if k, ok := mergeKey(s, g.MergeKeys); ok {
				if over, found := byKey[k]; found {
					out[j] = merge(s, over)
				}
			}
		}
	}
	return out, nil
}

func mergeKey(p Params, keys []string) (string, bool) {
	var b bytes.Buffer
	for _, k := range keys {
		v, ok := lookup(p, k)
		if !ok {
			return "", false
		}
		fmt.Fprintf(&b, "%d:%v\x00", len(k), v)
	}
	return b.String(), true
}
