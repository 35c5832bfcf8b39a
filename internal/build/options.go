package build

// Options change what a build reads; the zero value is Build's.
type Options struct {
	// Filter, when set, is given every file the build reads from the checkout —
	// kustomizations, resources, patches, generator inputs, plain manifests — by its
	// path relative to the checkout (slash-separated), after the confinement and size
	// checks, and returns what the build sees in its place (e.g. a SOPS-encrypted file
	// decrypted). It cannot widen what is read: it sees only files already admitted.
	// An error fails the build with it.
	Filter Filter
}

// Filter maps the content of a file read by a build (see Options.Filter).
type Filter func(rel string, data []byte) ([]byte, error)

// Exclusive runs fn while no kustomize build runs: kustomize keeps its OpenAPI schema
// in package state, which other users of kustomize's filters (strategic-merge patches
// over rendered objects) read.
func Exclusive(fn func() error) error {
	kustomizeMu.Lock()
	defer kustomizeMu.Unlock()
	return fn()
}
