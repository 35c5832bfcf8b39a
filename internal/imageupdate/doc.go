// Package imageupdate rewrites the image references marked with Flux's setter comments
// in a Git repository's YAML files, commits (optionally signed) and pushes.
package imageupdate
