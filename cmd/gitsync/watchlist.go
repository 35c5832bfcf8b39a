package main

import (
	"os"

	clientfeatures "k8s.io/client-go/features"
)

// listThenWatch makes the operator's informers start with a LIST served from the API
// server's watch cache, then WATCH, as client-go did before 1.35, instead of a watch-list
// stream (client-go's WatchListClient, on by default since 1.35). A watch-list stream is
// answered only once the API server's watch cache has caught up with etcd's latest
// revision; for a kind nobody wrote lately (gitsync's own kinds, most of the time) that
// waits for etcd's progress notification — measured: 1.1 s per informer start, and the
// operator starts its informers in two rounds (the manager's cache, then each
// controller's sources), so `gitsync run` took 2.2–2.7 s from start to ready to sync
// (BenchmarkBinary, start → ready to sync; 0.5–0.8 s with this). A LIST from the cache
// does not wait. The operator lists a few kinds, at most some thousand objects each:
// the streaming's memory saving on the API server does not matter here. Setting
// KUBE_FEATURE_WatchListClient (true or false) leaves client-go's choice to it.
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
