package ui_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/ui"
)

// The page of an Application of spec.sources lists its sources, each with its path and
// the revision applied; no rollback is offered.
func TestApplicationPageListsSources(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFixture(t)
	sha := f.repo.Commit("main", "two more paths", map[string]string{
		"one/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: one\n",
		"two/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: two\n",
	})
	ref := gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "app-repo"}
	app := &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Name: "both", Namespace: f.ns},
		Spec: gitsyncv1.ApplicationSpec{Sources: []gitsyncv1.ApplicationSource{{SourceRef: ref, Path: "./one"}, {SourceRef: ref, Path: "./two"}}}}
	g.Expect(env.Client.Create(ctx, app)).To(Succeed())
	// The GitRepository fetches the new commit now (a sync request), not at its interval.
	repo := &gitsyncv1.GitRepository{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "app-repo"}, repo)).To(Succeed())
	repoBase := client.MergeFrom(repo.DeepCopy())
	repo.Annotations = map[string]string{gitsyncv1.RequestedAtAnnotation: "fetch"}
	g.Expect(env.Client.Patch(ctx, repo, repoBase)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(app), app)).To(Succeed())
		g.Expect(app.Status.LastAppliedRevision).To(Equal("GitRepository/app-repo@main@sha1:" + sha))
		g.Expect(apimeta.IsStatusConditionTrue(app.Status.Conditions, gitsyncv1.ReadyCondition)).To(BeTrue())
	}).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

	srv := startUI(t, env.Config, ui.Options{})
	resp, body := get(t, srv.URL+"/api/apps/"+f.ns+"/both")
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK), body)
	var d ui.AppDetail
	g.Expect(json.Unmarshal([]byte(body), &d)).To(Succeed())
	g.Expect(d.Sources).To(HaveLen(2))
	g.Expect(d.Sources[1]).To(Equal(ui.SourceView{Name: "GitRepository/" + f.ns + "/app-repo", Link: "/sources#GitRepository/" + f.ns + "/app-repo",
		Path: "./two", Revision: "main@sha1:" + sha[:7]}))
	g.Expect(d.Revision).To(Equal("app-repo@main@sha1:" + sha[:7]))
	g.Expect(d.CanRollback).To(BeFalse())
	resp, body = get(t, srv.URL+"/apps/"+f.ns+"/both")
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(body).To(And(ContainSubstring(`id="sources"`), ContainSubstring("<code>./one</code>"), ContainSubstring("<code>./two</code>")))
}
