package operator_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/operator"
	"github.com/gitsync-dev/gitsync/internal/shard"
	"github.com/gitsync-dev/gitsync/internal/testutil/apicount"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
	"github.com/gitsync-dev/gitsync/internal/testutil/operatortest"
)

// shardedApp is an Application of the test: its shard (by the hash of its name), its
// source, and the namespace its ConfigMap is applied to.
type shardedApp struct {
	name, source, target string
	shard                int
}

// Two operators, --shard 0/2 and 1/2, against one API server, each with its own disk:
// every Application is applied by the replica of its shard only (the other makes no
// request at all in its target namespace), also when its source belongs to the other
// shard (the Application's replica fetches that commit itself), and drift is corrected by
// the owner only. Then a standby replica of shard 0 idles while the first lives, takes
// the shard over when it dies, and applies a new commit; last, an Application of shard 1
// relabelled gitsync.dev/shard: "0" is applied by shard 0's replica only.
func TestShardsSplitApplicationsAndFailOver(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	env := operator.SharedEnv()
	ns := env.Namespace(t)
	srv := gittest.NewServer(t, gittest.Options{})
	election := func(s shard.Shard) operator.Options {
		return operator.Options{Shard: s, LeaderElection: true, LeaderElectionNamespace: ns,
			LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond}
	}
	shards := []shard.Shard{{Index: 0, Count: 2}, {Index: 1, Count: 2}}
	counters := make([]*apicount.Counter, 2)
	stops := make([]func(), 2)
	for i, s := range shards {
		counters[i], _, stops[i] = operatortest.Run(t, env, election(s))
	}

	// Sources: src-0 is put in shard 0 and src-1 in shard 1 by the gitsync.dev/shard label.
	// Applications: names whose hash puts five in each shard, each shard's alternating
	// between the two sources, so that half of them read a source of the other shard.
	apps := balancedApps(t, ns, 5)
	files := map[string]map[string]string{"src-0": {}, "src-1": {}}
	for _, a := range apps {
		files[a.source]["apps/"+a.name+"/cm.yaml"] = configMap("v1")
	}
	revisions := map[string]string{}
	repos := map[string]*gittest.Repo{}
	for i, name := range []string{"src-0", "src-1"} {
		repos[name] = srv.CreateRepo(name)
		sha := repos[name].Commit("main", "apps", files[name])
		revisions[name] = "main@sha1:" + sha
		g.Expect(env.Client.Create(ctx, &gitsyncv1.GitRepository{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{gitsyncv1.ShardLabel: fmt.Sprint(i)}},
			Spec:       gitsyncv1.GitRepositorySpec{URL: srv.HTTPURL(name), Interval: &metav1.Duration{Duration: 10 * time.Minute}},
		})).To(Succeed())
	}
	for _, a := range apps {
		g.Expect(env.Client.Create(ctx, &gitsyncv1.Application{
			ObjectMeta: metav1.ObjectMeta{Name: a.name, Namespace: ns},
			Spec: gitsyncv1.ApplicationSpec{
				SourceRef:       gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: a.source},
				Path:            "apps/" + a.name,
				TargetNamespace: a.target,
				Prune:           true,
			},
		})).To(Succeed())
	}
	for _, a := range apps {
		waitApplied(t, ns, a, revisions[a.source], "v1")
	}
	// Each target namespace saw the applies of its shard's replica and no request at all
	// from the other one.
	for _, a := range apps {
		owner, other := counters[a.shard].InNamespace(a.target), counters[1-a.shard].InNamespace(a.target)
		g.Expect(owner["patch"]).To(BeNumerically(">", 0), "%s (shard %d): requests of its replica: %s", a.name, a.shard, apicount.Format(owner))
		g.Expect(other).To(BeEmpty(), "%s (shard %d): requests of the other replica: %s", a.name, a.shard, apicount.Format(other))
	}

	// Drift: a change to an object of a shard-1 Application is reverted by shard 1 alone.
	drifted := appOfShard(apps, 1, "src-0")
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: drifted.target, Name: "cm"}, cm)).To(Succeed())
	cm.Data["value"] = "edited"
	g.Expect(env.Client.Update(ctx, cm)).To(Succeed())
	waitApplied(t, ns, drifted, revisions["src-0"], "v1")
	g.Expect(counters[0].InNamespace(drifted.target)).To(BeEmpty())

	// Failover: a standby of shard 0 waits for the lease while the first replica lives.
	standby, _, _ := operatortest.Run(t, env, election(shards[0]))
	moved := appOfShard(apps, 0, "src-0")
	newRevision := "main@sha1:" + repos["src-0"].Commit("main", "v2", map[string]string{"apps/" + moved.name + "/cm.yaml": configMap("v2")})
	g.Consistently(func(g Gomega) {
		for _, a := range apps {
			g.Expect(standby.InNamespace(a.target)).To(BeEmpty(), "the standby made requests for %s while the leader lived", a.name)
		}
	}).WithTimeout(2 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	stops[0]() // the replica dies without giving up its lease
	waitApplied(t, ns, moved, newRevision, "v2")
	g.Expect(standby.InNamespace(moved.target)["patch"]).To(BeNumerically(">", 0))
	g.Expect(counters[1].InNamespace(moved.target)).To(BeEmpty())

	// Relabelled gitsync.dev/shard: "0", an Application of shard 1 is shard 0's from then on.
	waitApplied(t, ns, drifted, newRevision, "v1") // shard 1 applied src-0's new commit
	app := &gitsyncv1.Application{}
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: drifted.name}, app)).To(Succeed())
	app.Labels = map[string]string{gitsyncv1.ShardLabel: "0"}
	g.Expect(env.Client.Update(ctx, app)).To(Succeed())
	byShard1 := counters[1].InNamespace(drifted.target)
	v3 := "main@sha1:" + repos["src-0"].Commit("main", "v3", map[string]string{"apps/" + drifted.name + "/cm.yaml": configMap("v3")})
	src := &gitsyncv1.GitRepository{}
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "src-0"}, src)).To(Succeed())
	src.Annotations = map[string]string{gitsyncv1.RequestedAtAnnotation: "v3"}
	g.Expect(env.Client.Update(ctx, src)).To(Succeed())
	waitApplied(t, ns, drifted, v3, "v3")
	g.Expect(standby.InNamespace(drifted.target)["patch"]).To(BeNumerically(">", 0))
	g.Expect(counters[1].InNamespace(drifted.target)).To(Equal(byShard1))
}

// balancedApps names 2×perShard Applications in ns, perShard in each of two shards by
// the hash, each with its own target namespace; within a shard they alternate between
// the sources src-0 and src-1.
func balancedApps(t *testing.T, ns string, perShard int) []shardedApp {
	var apps []shardedApp
	taken := [2]int{}
	for i := 0; taken[0]+taken[1] < 2*perShard; i++ {
		name := fmt.Sprintf("app-%02d", i)
		n := shard.Shard{Count: 2}.Of(types.NamespacedName{Namespace: ns, Name: name}, nil)
		if taken[n] == perShard {
			continue
		}
		apps = append(apps, shardedApp{name: name, shard: n, source: fmt.Sprintf("src-%d", taken[n]%2), target: operator.SharedEnv().Namespace(t)})
		taken[n]++
	}
	return apps
}

func appOfShard(apps []shardedApp, n int, source string) shardedApp {
	for _, a := range apps {
		if a.shard == n && a.source == source {
			return a
		}
	}
	panic("no such application")
}

func configMap(value string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  value: " + value + "\n"
}

// waitApplied waits until the Application is Ready at revision and its ConfigMap holds value.
func waitApplied(t *testing.T, ns string, a shardedApp, revision, value string) {
	t.Helper()
	env := operator.SharedEnv()
	NewWithT(t).Eventually(func(g Gomega) {
		app := &gitsyncv1.Application{}
		g.Expect(env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: a.name}, app)).To(Succeed())
		g.Expect(apimeta.IsStatusConditionTrue(app.Status.Conditions, gitsyncv1.ReadyCondition)).To(BeTrue(),
			"%s: %v", a.name, app.Status.Conditions)
		g.Expect(app.Status.LastAppliedRevision).To(Equal(revision))
		cm := &corev1.ConfigMap{}
		g.Expect(env.Client.Get(context.Background(), types.NamespacedName{Namespace: a.target, Name: "cm"}, cm)).To(Succeed())
		g.Expect(cm.Data).To(HaveKeyWithValue("value", value))
	}).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
}
