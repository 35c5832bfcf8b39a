package yamlbudget

import "go.yaml.in/yaml/v3"

// shape is what a node expands to: its values and its depth, aliases followed.
type shape struct {
	size, depth int
}

// walk computes the expanded shape of yaml nodes, memoised per node so that each
// aliased node is walked once, saturating above limit values, and calls scalar on each
// tagged scalar.
type walk struct {
	sizes  map[*yaml.Node]shape // size -1 while the node is being walked (an alias cycle)
	limit  int
	scalar func(*yaml.Node) error
	err    error
}

func (w *walk) shape(n *yaml.Node) shape {
	if n == nil {
		return shape{}
	}
	if n.Kind == yaml.AliasNode {
		return w.shape(n.Alias)
	}
	if s, ok := w.sizes[n]; ok {
		if s.size < 0 {
			return shape{size: w.limit + 1} // an alias to its own ancestor expands forever
		}
		return s
	}
	if len(n.Content) == 0 {
		if w.scalar != nil && w.err == nil && n.Kind == yaml.ScalarNode && n.Style&yaml.TaggedStyle != 0 {
			w.err = w.scalar(n)
		}
		return shape{size: 1, depth: 1} // scalars are not memoised: there are many and none is reached twice cheaply
	}
	w.sizes[n] = shape{size: -1}
	total := shape{size: 1}
	for _, c := range n.Content {
		s := w.shape(c)
		total.size += s.size
		total.depth = max(total.depth, s.depth)
		if total.size > w.limit || total.depth > MaxDepth {
			total.size = min(total.size, w.limit+1)
			break
		}
	}
	if n.Kind != yaml.DocumentNode {
		total.depth++
	}
	w.sizes[n] = total
	return total
}
