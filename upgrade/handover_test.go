package upgrade

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	gitsyncv1alpha1 "github.com/gitsync-dev/gitsync/api/v1alpha1"
	gitsyncv1beta1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/gitsyncproc"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

// quiet is how long an operator that took over must send no write request to the
// namespace before the hand-over counts as settled; it gets at least minTakeover after
// its start. fetchDelay slows the Git server's fetches meanwhile, so that every
// Application is reconciled by the new operator before its source has fetched the
// checkout again into the fresh storage (the order that a Git host slower than 20
// reconciles gives; without the delay the counts would depend on a race).
const (
	quiet       = 5 * time.Second
	minTakeover = 15 * time.Second
	fetchDelay  = 10 * time.Second
)

// handOver is one operator replacing another, as a rollout does.
type handOver struct {
	// name says which way ("upgrade v0.1.0 -> working tree").
	name string
	// crds are installed between the two operators.
	crds envtest.CRDInstallOptions
	// next is the operator that takes over; its storage is fresh, as an emptyDir's.
	next gitsyncproc.Options
}

// handed is what the operator that took over did until it settled.
type handed struct {
	counts takeover
	// changes are the objects changed, deleted or created meanwhile (snapshots).
	changes []string
	// notReady lists the Applications that showed Ready other than True, with the reasons.
	notReady map[string][]string
	took     time.Duration
	next     *gitsyncproc.Process
}

// run stops prev (SIGTERM), installs h.crds, starts h.next and waits until every
// Application is Ready at revision and the new operator has been quiet for quiet.
func (h handOver) run(t *testing.T, ctx context.Context, ns string, srv *gittest.Server, prev *gitsyncproc.Process, revision string) handed {
	t.Helper()
	g := NewWithT(t)
	before := settledSnapshot(t, ns)
	g.Expect(prev.Stop(30*time.Second)).To(BeTrue(), "%s: the operator did not end within 30s of SIGTERM", h.name)
	offset := auditOffset(t)
	_, err := envtest.InstallCRDs(env.Config, h.crds)
	g.Expect(err).NotTo(HaveOccurred())
	srv.SetFetchDelay(fetchDelay)
	defer srv.SetFetchDelay(0)
	notReady := watchNotReady(ctx, t, ns)
	start := time.Now()
	next := gitsyncproc.Start(t, h.next)
	logOnFailure(t, h.next.Log)
	g.Eventually(func() (string, error) {
		data, err := os.ReadFile(h.next.Log)
		return string(data), err
	}).WithTimeout(time.Minute).WithPolling(pollInterval).Should(ContainSubstring("Starting workers"))
	waitQuiet(t, ns, offset, start)
	waitAllReady(t, ns, revision, 2*time.Minute)
	out := handed{counts: classify(operatorWrites(t, offset), ns), changes: changes(before, snapshot(g, ns)),
		notReady: notReady(), took: time.Since(start), next: next}
	t.Logf("%s, 20 Applications, settled in %s: %s", h.name, out.took.Round(time.Second), out.counts)
	t.Logf("%s counts: writes=%d prunes=%d hookRuns=%d; objects changed, deleted or created: %d %v; "+
		"Applications that left Ready meanwhile: %d %v", h.name, len(out.counts.writes), len(out.counts.prunes),
		len(out.counts.hookRuns), len(out.changes), out.changes, len(out.notReady), out.notReady)
	return out
}

// operator is the Options of an operator of binary with a fresh storage directory and a
// log named after name.
func operator(binary, name string, commonFlagsOnly bool) gitsyncproc.Options {
	return gitsyncproc.Options{Binary: binary, Kubeconfig: kubeconfig, CommonFlagsOnly: commonFlagsOnly,
		StoragePath: filepath.Join(workDir, "storage-"+name), Log: filepath.Join(workDir, "gitsync-"+name+".log")}
}

// settledSnapshot waits until the objects of ns stop changing (the operator is done,
// every hook finished) and returns their snapshot.
func settledSnapshot(t *testing.T, ns string) map[string]string {
	t.Helper()
	g := NewWithT(t)
	prev := snapshot(g, ns)
	for deadline := time.Now().Add(time.Minute); ; {
		time.Sleep(2 * time.Second)
		cur := snapshot(g, ns)
		if len(changes(prev, cur)) == 0 {
			return cur
		}
		if time.Now().After(deadline) {
			t.Fatalf("the objects kept changing: %v", changes(prev, cur))
		}
		prev = cur
	}
}

// waitQuiet waits until the operator has sent no write request to ns for quiet, and at
// least minTakeover has passed since start.
func waitQuiet(t *testing.T, ns string, offset int64, start time.Time) {
	t.Helper()
	count := func() int {
		n := 0
		for _, e := range operatorWrites(t, offset) {
			if e.ObjectRef.Namespace == ns {
				n++
			}
		}
		return n
	}
	last, lastChange := count(), time.Now()
	for deadline := time.Now().Add(2 * time.Minute); ; {
		time.Sleep(500 * time.Millisecond)
		if n := count(); n != last {
			last, lastChange = n, time.Now()
		}
		if time.Since(lastChange) >= quiet && time.Since(start) >= minTakeover {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the operator kept writing to the namespace: %s", classify(operatorWrites(t, offset), ns))
		}
	}
}

// watchNotReady watches the Applications of ns and returns a function that stops the
// watch and lists, for each Application that showed Ready other than True, the reasons.
func watchNotReady(ctx context.Context, t *testing.T, ns string) func() map[string][]string {
	t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(ctx, &gitsyncv1alpha1.ApplicationList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string][]string{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			a, ok := ev.Object.(*gitsyncv1alpha1.Application)
			if !ok {
				continue
			}
			ready := apimeta.FindStatusCondition(a.Status.Conditions, gitsyncv1beta1.ReadyCondition)
			if ready == nil || ready.Status == metav1.ConditionTrue {
				continue
			}
			why := fmt.Sprintf("%s/%s", ready.Status, ready.Reason)
			mu.Lock()
			if !slices.Contains(seen[a.Name], why) {
				seen[a.Name] = append(seen[a.Name], why)
			}
			mu.Unlock()
		}
	}()
	return func() map[string][]string {
		w.Stop()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}

func logOnFailure(t *testing.T, log string) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last lines of %s:\n%s", filepath.Base(log), gitsyncproc.Tail(log, 40))
		}
	})
}
