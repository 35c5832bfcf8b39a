// Package layering holds the import-boundary test: which of gitsync's packages may
// import which (docs/architecture.md, "The import rules"). It has no code of its own.
package layering
