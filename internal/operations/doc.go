// Package operations holds what a person asks of gitsync — request a sync (with its
// source, hooks, prune), suspend, resume, roll back, diff, tree, events, history, explain
// — as functions over a client acting as that person, returning values; the CLI, the web
// UI and the MCP server present them and import no controller.
package operations
