package main

import (
	"bytes"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	clientfeatures "k8s.io/client-go/features"

	"github.com/gitsync-dev/gitsync/internal/cli"
)

// `gitsync run` starts its informers with a LIST and a WATCH, not a watch-list stream
// (which waits for the API server's watch cache to catch up with etcd: 1.1 s per
// informer start, measured by BenchmarkBinary); an explicit KUBE_FEATURE_WatchListClient
// is left to client-go.
func TestRunStartsInformersWithAList(t *testing.T) {
	g := NewWithT(t)
	before := clientfeatures.FeatureGates()
	t.Cleanup(func() { clientfeatures.ReplaceFeatureGates(before) })
	g.Expect(before.Enabled(clientfeatures.WatchListClient)).To(BeTrue(), "client-go's default")

	root := newRoot(cli.Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}})
	run, _, err := root.Find([]string{"run"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(root.PersistentPreRunE(run, nil)).To(Succeed()) // what cobra runs before `gitsync run`
	g.Expect(clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient)).To(BeFalse())
	g.Expect(clientfeatures.FeatureGates().Enabled(clientfeatures.InformerResourceVersion)).To(Equal(before.Enabled(clientfeatures.InformerResourceVersion)),
		"other features as client-go has them")

	t.Setenv("KUBE_FEATURE_WatchListClient", "true")
	chosen := clientfeatures.FeatureGates()
	listThenWatch()
	g.Expect(clientfeatures.FeatureGates()).To(BeIdenticalTo(chosen))
}
