// Package mcp is gitsync's Model Context Protocol server (`gitsync mcp`): it owns the
// tools an assistant calls over stdio — list and get Applications and sources, an
// Application's tree, diff, history and events, and explain (why it is not Synced or
// Healthy) — and, only when the server is started with AllowWrite, the write tools
// reconcile, suspend, resume and rollback. It reads and writes the cluster with the
// client it is given (the user's kubeconfig identity, so Kubernetes RBAC decides), logs
// every tool call, and presents internal/operations: it imports neither internal/cli nor
// any controller.
package mcp
