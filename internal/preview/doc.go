// Package preview shows on a pull request what its head commit would change in the
// cluster, Application by Application (a server-side dry-run; nothing is written).
package preview
