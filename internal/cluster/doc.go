// Package cluster reaches the Kubernetes clusters that Cluster objects describe: a
// tenant's kubeconfig checked and turned into a *rest.Config (no exec plugins, auth
// providers or files; http(s) servers only; dialled through the egress guard), the
// identity used there, a cache of clients per Cluster, and the /version probe.
package cluster
