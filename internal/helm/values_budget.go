package helm

import "github.com/gitsync-dev/gitsync/internal/yamlbudget"

// checkValues holds values (from names them) to the YAML budget: every document, aliases
// expanded, nesting and bytes. Helm's YAML reader (yaml.v2 under sigs.k8s.io/yaml) allows
// millions of values through aliases before it refuses a document as excessive aliasing.
func checkValues(from string, data []byte) error {
	return yamlbudget.Check("values "+from, data)
}
