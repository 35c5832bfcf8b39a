package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

// A request (gitsync.dev/requested-at: a push webhook, `gitsync reconcile source`) is
// one reconcile, so one ref listing: the controller's own watch and the high-priority
// request watch both took the update, and the second reconcile listed the refs again
// for nothing, beside the Applications' sync of the new commit.
func TestGitRepositoryRequestIsOneReconcile(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	srv := gittest.NewServer(t, gittest.Options{})
	sha := srv.CreateRepo("once").Commit("main", "only", map[string]string{"f": ns})
	newGitRepository(t, ns, "once", srv.HTTPURL("once"), nil, "", func(r *gitsyncv1.GitRepository) {
		r.Spec.Interval = &metav1.Duration{Duration: time.Hour}
	})
	waitRevision(t, ns, "once", "main@sha1:"+sha)
	// The first artifact's reconciles are over once the count stops moving.
	settle := func() int {
		var last int
		g.Eventually(func() bool {
			n := srv.Counts("once").RefListings
			moved := n != last
			last = n
			return moved
		}).WithTimeout(waitTimeout).WithPolling(time.Second).Should(BeFalse())
		return last
	}
	before := settle()
	for i := 1; i <= 3; i++ {
		value := fmt.Sprint(i)
		obj := getRepo(g, ns, "once")
		base := client.MergeFrom(obj.DeepCopy())
		obj.Annotations = map[string]string{gitsyncv1.RequestedAtAnnotation: value}
		g.Expect(env.Client.Patch(ctx, obj, base)).To(Succeed())
		g.Eventually(func(g Gomega) string { return getRepo(g, ns, "once").Status.LastHandledReconcileAt }).
			WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal(value))
	}
	g.Expect(settle() - before).To(Equal(3))
}
