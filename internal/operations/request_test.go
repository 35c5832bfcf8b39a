package operations_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/operations"
	"github.com/gitsync-dev/gitsync/internal/rollback"
)

// newApp creates an Application of a GitRepository (no controller runs: it stays as
// written) whose history holds one sync of rev.
func newApp(t *testing.T, rev string) (*gitsyncv1.Application, client.ObjectKey) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	app := &gitsyncv1.Application{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "web"},
		Spec: gitsyncv1.ApplicationSpec{
			SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "app-repo"},
			Path:      "./app",
		},
	}
	g.Expect(env.Client.Create(ctx, app)).To(Succeed())
	app.Status.History = []gitsyncv1.SyncHistoryEntry{{Revision: rev, Result: "Succeeded", StartedAt: metav1.Now()}}
	g.Expect(env.Client.Status().Update(ctx, app)).To(Succeed())
	return app, client.ObjectKeyFromObject(app)
}

// A sync request writes requested-at with its options; suspend refuses it; resume ends a
// rollback's pin and requests a reconcile; a pin takes a revision of the history only.
func TestRequestSuspendResumePin(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	rev := "main@sha1:" + strings.Repeat("ab", 20)
	_, key := newApp(t, rev)

	_, requested, err := operations.Request(ctx, env.Client, operations.App, key, operations.SyncOptions{Hooks: true, Prune: ptr.To(true)})
	g.Expect(err).NotTo(HaveOccurred())
	app := &gitsyncv1.Application{}
	g.Expect(env.Client.Get(ctx, key, app)).To(Succeed())
	g.Expect(app.PendingRequest()).To(Equal(requested))
	g.Expect(app.Annotations[gitsyncv1.RunHooksAnnotation]).To(Equal(requested))
	g.Expect(app.Prunes()).To(BeTrue(), "spec.prune is false; the request prunes this once")

	_, _, err = operations.Pin(ctx, env.Client, key, "0123abcd")
	g.Expect(errors.Is(err, rollback.ErrRefused)).To(BeTrue(), "%v", err)
	g.Expect(err).To(MatchError(ContainSubstring("not in the history")))
	_, pinned, err := operations.Pin(ctx, env.Client, key, strings.Repeat("ab", 5))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pinned).To(Equal(rev))

	_, err = operations.SetSuspend(ctx, env.Client, operations.App, key, true)
	g.Expect(err).NotTo(HaveOccurred())
	_, _, err = operations.Request(ctx, env.Client, operations.App, key, operations.SyncOptions{})
	g.Expect(operations.IsSuspended(err)).To(BeTrue(), "%v", err)
	g.Expect(err).To(MatchError("Application " + key.String() + " is suspended: resume it first (gitsync resume app web -n " + key.Namespace + ")"))
	g.Expect(env.Client.Get(ctx, key, app)).To(Succeed())
	g.Expect(app.PendingRequest()).To(Equal(requested), "a refused request writes nothing")

	_, err = operations.SetSuspend(ctx, env.Client, operations.App, key, false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Client.Get(ctx, key, app)).To(Succeed())
	g.Expect(app.Spec.Suspend).To(BeFalse())
	g.Expect(app.Spec.PinnedRevision).To(BeEmpty(), "resume ends a rollback")
	g.Expect(app.PendingRequest()).NotTo(BeElementOf("", requested), "resume requests a reconcile at once")
	g.Expect(app.RequestedPrune()).To(BeNil(), "the earlier request's prune option does not carry over")

	_, err = operations.SetSuspend(ctx, env.Client, operations.GitRepository, client.ObjectKey{Namespace: key.Namespace, Name: "nope"}, true)
	g.Expect(err).To(MatchError(`GitRepository "nope" not found in namespace ` + key.Namespace))
}

// The steps a reconcile reports read as the CLI prints them.
func TestStepString(t *testing.T) {
	g := NewWithT(t)
	key := client.ObjectKey{Namespace: "team", Name: "web"}
	app := &gitsyncv1.Application{}
	app.Status.LastAppliedRevision = "main@sha1:1"
	app.Status.Health = &gitsyncv1.HealthInfo{Status: gitsyncv1.HealthStatusHealthy}
	syncs := []gitsyncv1.SyncHistoryEntry{{Revision: "main@sha1:2", Created: 1, Configured: 2, Unchanged: 3, Pruned: 4}}
	// A selective sync (gitsync sync app --resource) writes no history entry.
	selective := app.DeepCopy()
	selective.Status.SelectiveSync = &gitsyncv1.SelectiveSyncStatus{Revision: "main@sha1:2", Objects: []string{"ConfigMap/team/settings"}}
	for _, c := range []struct {
		step operations.Step
		want string
	}{
		{operations.Step{Type: operations.Requested, Kind: operations.App, Key: key}, "► reconcile of Application team/web requested"},
		{operations.Step{Type: operations.Waiting, Kind: operations.App, Key: key, Message: "hook db-migrate"}, "◎ waiting for the sync: hook db-migrate"},
		{operations.Step{Type: operations.Pinned, Kind: operations.App, Key: key, Message: "main@sha1:1"},
			"Application team/web pinned to main@sha1:1; newer commits are not applied until `gitsync resume app web`"},
		{operations.Step{Type: operations.Handled, Kind: operations.App, Key: key, Object: app, Syncs: syncs},
			"✔ Application team/web: applied revision main@sha1:2 (1 created, 2 configured, 3 unchanged, 4 pruned), health Healthy"},
		{operations.Step{Type: operations.Handled, Kind: operations.App, Key: key, Object: app},
			"✔ Application team/web: up to date, no changes (applied revision main@sha1:1), health Healthy"},
		{operations.Step{Type: operations.Handled, Kind: operations.App, Key: key, Object: selective},
			"✔ Application team/web: applied ConfigMap/team/settings of revision main@sha1:2; the rest stays at main@sha1:1 (OutOfSync), health Healthy"},
		{operations.Step{Type: operations.Handled, Kind: operations.GitRepository, Key: key, Object: &gitsyncv1.GitRepository{}},
			"✔ GitRepository team/web: revision -"},
	} {
		g.Expect(c.step.String()).To(Equal(c.want))
	}
}
