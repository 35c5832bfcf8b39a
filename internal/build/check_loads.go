package build

import "fmt"

// maxKustomizationLoads bounds how many times one build loads kustomizations. Kustomize
// builds a base once for every path that leads to it: 18 levels of two overlays each
// referring to the next level are 55 two-line files and 2^18 builds, more than 5
// minutes of CPU (the test was stopped there) while every other tenant's kustomize
// build waits (they are serialised).
const maxKustomizationLoads = 10_000

// loads refuses a build whose kustomization directories (checked by dir, from root)
// kustomize would load more than maxKustomizationLoads times.
func (c *checker) loads(root string) error {
	memo := map[string]int{}
	if n := c.countLoads(root, memo); n > maxKustomizationLoads {
		return fmt.Errorf("%s: kustomize would build its bases and components more than %d times "+
			"(a base reached through several paths is built once per path): %w", relToRoot(c.root, root), maxKustomizationLoads, ErrTooLarge)
	}
	return nil
}

// countLoads returns how many times kustomize loads dir and what it refers to,
// saturating above maxKustomizationLoads. A cycle counts once: kustomize reports it.
func (c *checker) countLoads(dir string, memo map[string]int) int {
	if n, ok := memo[dir]; ok {
		return max(n, 1) // -1: in a cycle
	}
	memo[dir] = -1
	n := 1
	for _, child := range c.edges[dir] {
		n = min(n+c.countLoads(child, memo), maxKustomizationLoads+1)
	}
	memo[dir] = n
	return n
}
