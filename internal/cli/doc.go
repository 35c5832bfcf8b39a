// Package cli is the gitsync command line: get, diff, build, reconcile, suspend/resume,
// wait, events, history, tree, rollback, install, bootstrap, uninstall and version, with
// kubectl's kubeconfig flags. It presents internal/operations; cmd/gitsync adds the
// other people's tools (ui, mcp) as Tools over the same flags.
package cli
