// Package cli is the gitsync command line: get, diff, build, reconcile, suspend/resume,
// wait, events, history, tree, rollback, install, bootstrap, uninstall, version and mcp
// (which serves these as MCP tools through internal/mcp), with kubectl's kubeconfig flags.
package cli
