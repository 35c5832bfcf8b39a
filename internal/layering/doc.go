// Package layering holds the import-boundary test: which of gitsync's packages may
// import which (DESIGN.md "Packages: the house"). It has no code of its own.
package layering
