package ui_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/ui"
)

// An Application whose sync window is Closed shows it with until when: a badge in the
// list, a banner on its page.
func TestClosedSyncWindowShowsUntilWhen(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFixture(t)
	app := &gitsyncv1.Application{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.app), app)).To(Succeed())
	// Allowed one hour a year: closed, until a time that stays put while the test runs
	// (except in that hour).
	app.Spec.SyncWindows = []gitsyncv1.SyncWindow{{Kind: "allow", Schedule: "0 0 1 1 *", Duration: metav1.Duration{Duration: time.Hour}}}
	g.Expect(env.Client.Update(ctx, app)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.app), app)).To(Succeed())
		g.Expect(app.Status.SyncWindow).NotTo(BeNil())
		g.Expect(app.Status.SyncWindow.State).To(Equal(gitsyncv1.SyncWindowClosed))
		g.Expect(app.Status.SyncWindow.Until).NotTo(BeNil())
	}).WithTimeout(60 * time.Second).WithPolling(300 * time.Millisecond).Should(Succeed())
	srv := startUI(t, env.Config, ui.Options{})

	var row *ui.AppRow
	g.Eventually(func(g Gomega) {
		_, body := get(t, srv.URL+"/api/apps")
		var apps struct{ Items []ui.AppRow }
		g.Expect(json.Unmarshal([]byte(body), &apps)).To(Succeed())
		for i := range apps.Items {
			if apps.Items[i].Namespace == f.ns {
				row = &apps.Items[i]
			}
		}
		g.Expect(row).NotTo(BeNil())
		g.Expect(row.WindowClosed).To(BeTrue())
	}).WithTimeout(20 * time.Second).WithPolling(300 * time.Millisecond).Should(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.app), app)).To(Succeed())
	until := app.Status.SyncWindow.Until.UTC().Format(time.RFC3339)
	g.Expect(row.WindowUntil).NotTo(BeEmpty())

	resp, body := get(t, srv.URL+"/")
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(body).To(ContainSubstring(`class="badge window-closed"`))
	g.Expect(body).To(ContainSubstring(`datetime="` + until + `"`))
	resp, body = get(t, srv.URL+"/apps/"+f.ns+"/web")
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(body).To(ContainSubstring(`id="window-banner"`))
	g.Expect(body).To(ContainSubstring(`datetime="` + until + `"`))
}
