// Package cli is the gitsync command line: get, diff, build, reconcile, suspend/resume,
// wait, events, history, tree, rollback and version, with kubectl's kubeconfig flags.
package cli
