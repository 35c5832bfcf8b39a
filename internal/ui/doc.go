// Package ui serves gitsync's web UI: applications, their resource trees, diffs and drift, and sources, updated live from a shared cache.
package ui
