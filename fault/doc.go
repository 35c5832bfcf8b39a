// Package fault holds gitsync's fault suite: the operator binary killed mid-apply, the Git server and the API server going away, and bad input, each checked against the state of the cluster.
package fault
