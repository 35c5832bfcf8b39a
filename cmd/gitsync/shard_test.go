package main

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

func TestRunRejectsABadShard(t *testing.T) {
	for flag, want := range map[string]string{
		"2/2": "--shard: shard \"2/2\": N must be in 0..1",
		"1":   "--shard: shard \"1\": want N/M",
		"0/0": "M must be at least 1",
	} {
		cmd := newRunCommand()
		NewWithT(t).Expect(cmd.Flags().Parse([]string{"--shard", flag})).To(Succeed())
		cmd.SetContext(context.Background())
		NewWithT(t).Expect(cmd.RunE(cmd, nil)).To(MatchError(ContainSubstring(want)), flag)
	}
}

// `gitsync run --shard 1/2 --leader-elect` holds the lease of shard 1 and reconciles the
// sources of shard 1 only (here chosen by the gitsync.dev/shard label).
func TestRunShard(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	startRun(t, "--leader-elect", "--leader-election-namespace", ns, "--leader-elect-lease-duration", "5s",
		"--leader-elect-renew-deadline", "4s", "--leader-elect-retry-period", "1s", "--shard", "1/2")

	srv := gittest.NewServer(t, gittest.Options{})
	srv.CreateRepo("app").Commit("main", "x", map[string]string{"a.yaml": "a: 1\n"})
	repos := map[string]*gitsyncv1.GitRepository{}
	for _, n := range []string{"0", "1"} {
		repos[n] = &gitsyncv1.GitRepository{
			ObjectMeta: metav1.ObjectMeta{Name: "in-shard-" + n, Namespace: ns, Labels: map[string]string{gitsyncv1.ShardLabel: n}},
			Spec:       gitsyncv1.GitRepositorySpec{URL: srv.HTTPURL("app")},
		}
		g.Expect(env.Client.Create(ctx, repos[n])).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(repos["1"]), repos["1"])).To(Succeed())
		g.Expect(apimeta.IsStatusConditionTrue(repos["1"].Status.Conditions, gitsyncv1.ReadyCondition)).To(BeTrue())
	}).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(repos["0"]), repos["0"])).To(Succeed())
		g.Expect(repos["0"].Status.Conditions).To(BeEmpty())
		g.Expect(repos["0"].Status.Artifact).To(BeNil())
	}).WithTimeout(2 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

	lease := &coordinationv1.Lease{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gitsync-leader-shard-1-of-2.gitsync.dev"}, lease)).To(Succeed())
	g.Expect(lease.Spec.HolderIdentity).NotTo(BeNil())
	g.Expect(*lease.Spec.LeaseDurationSeconds).To(BeEquivalentTo(5))
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gitsync-leader.gitsync.dev"}, &coordinationv1.Lease{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the unsharded lease: %v", err)
}
