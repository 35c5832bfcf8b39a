package main

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/egress"
	"github.com/gitsync-dev/gitsync/internal/testutil/receiver"
)

// `gitsync run` with the default --deny-egress (and without --allow-file-urls): a
// GitRepository at a listener on 127.0.0.1, or a file:// URL, is refused with a clear
// reason, and the listener receives nothing.
func TestRunDefaultEgressGuard(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	startRun(t, "--deny-egress", egress.FormatCIDRs(egress.DefaultDeny))
	ln := receiver.Listen(t)
	ns := env.Namespace(t)
	for name, url := range map[string]string{"loopback": "http://" + ln.Addr().String() + "/app.git", "file": "file:///etc/app.git"} {
		repo := &gitsyncv1.GitRepository{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec:       gitsyncv1.GitRepositorySpec{URL: url, Interval: &metav1.Duration{Duration: time.Minute}},
		}
		g.Expect(env.Client.Create(ctx, repo)).To(Succeed())
	}
	for name, want := range map[string]string{"loopback": "--deny-egress", "file": "--allow-file-urls"} {
		g.Eventually(func(g Gomega) {
			repo := &gitsyncv1.GitRepository{}
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, repo)).To(Succeed())
			ready := apimeta.FindStatusCondition(repo.Status.Conditions, gitsyncv1.ReadyCondition)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(ready.Message).To(ContainSubstring(want))
		}).WithTimeout(60*time.Second).WithPolling(200*time.Millisecond).Should(Succeed(), name)
	}
	g.Expect(ln.Accepted()).To(BeZero())
}

func TestDenyEgressFlag(t *testing.T) {
	g := NewWithT(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, egress.FormatCIDRs(egress.DefaultDeny)},
		{[]string{"--deny-egress="}, ""},
		{[]string{"--deny-egress", "10.0.0.0/8,127.0.0.1"}, "10.0.0.0/8,127.0.0.1/32"},
	} {
		o := &runOptions{}
		g.Expect(newRunCommandWith(o).Flags().Parse(tc.args)).To(Succeed())
		got, err := egress.ParseCIDRs(o.denyEgress)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(egress.FormatCIDRs(got)).To(Equal(tc.want))
		g.Expect(o.operator.AllowFileURLs).To(BeFalse())
	}
}
