package main

import (
	"os"

	clientfeatures "k8s.io/client-go/features"
)

// listThenWatch makes the operator's informers start with a LIST served from the API
// server's watch cache, then WATCH, as client-go did before 1.35, instead of a watch-list
// stream (client-go's WatchListClient, on by default since 1.35). A watch-list stream
// ends its initial events only once the API server's watch cache is as fresh as etcd (a
// consistent read); against an API server that no operator had watched before (a new
// cluster, `gitsync demo`, CI) that took 1.1 s per informer round, and the operator
// starts its informers in two rounds (the manager's cache, then each controller's
// sources), and again for each new kind its drift watch meets. BenchmarkBinary, 20 x 20,
// medians of 3, load 17-22 on 2 cores: start -> ready to sync 2.29 s -> 0.40 s; a new
// GitRepository + Application with a CRD on a warm operator 381 -> 285 ms; a restart
// against the same API server 0.38 s either way. A LIST from the cache does not wait.
// The operator lists a few kinds of at most some thousand objects: the streaming's memory
// saving on the API server does not matter here. Setting KUBE_FEATURE_WatchListClient
// (true or false) leaves client-go's choice to it.
func listThenWatch() {
	if _, set := os.LookupEnv("KUBE_FEATURE_" + string(clientfeatures.WatchListClient)); set {
		return
	}
	clientfeatures.ReplaceFeatureGates(withoutWatchList{clientfeatures.FeatureGates()})
}

// withoutWatchList is client-go's feature gates with WatchListClient off.
type withoutWatchList struct{ clientfeatures.Gates }

func (g withoutWatchList) Enabled(f clientfeatures.Feature) bool {
	if f == clientfeatures.WatchListClient {
		return false
	}
	return g.Gates.Enabled(f)
}
