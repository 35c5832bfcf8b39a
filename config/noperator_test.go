package config_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1alpha1 "github.com/gitsync-dev/gitsync/api/v1alpha1"
	gitsyncv1beta1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/config"
	"github.com/gitsync-dev/gitsync/internal/install"
)

// applyInstalledCRDs server-side-applies the CRDs of the install (config/default, what
// `gitsync install`, the chart and the bundle ship) to the test API server, for real, and
// waits until they are established.
func applyInstalledCRDs(t *testing.T) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	objs, err := config.Install()
	g.Expect(err).NotTo(HaveOccurred())
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		g.Expect(env.Client.Patch(ctx, o.DeepCopy(), client.Apply, client.ForceOwnership, client.FieldOwner("gitsync-install"))).
			To(Succeed(), o.GetName())
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = install.WaitForCRDs(ctx, env.Client, objs)
	g.Expect(err).NotTo(HaveOccurred(), "the install's CRDs established")
}

// With the install's CRDs and no operator running (nothing serves a webhook here),
// every kind served in two versions is written as v1alpha1, read and written as
// v1beta1, and read back as v1alpha1, spec and status alike.
func TestBothVersionsWorkWithoutOperator(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	applyInstalledCRDs(t)
	ns := env.Namespace(t)

	// Each kind, created as a v1alpha1 manifest would be, then read as v1beta1.
	for _, o := range []map[string]any{
		{"kind": "GitRepository", "spec": map[string]any{"url": "https://example.com/repo.git", "ref": map[string]any{"branch": "main"}}},
		{"kind": "HelmRepository", "spec": map[string]any{"url": "https://charts.example.com"}},
		{"kind": "Application", "spec": map[string]any{"sourceRef": map[string]any{"kind": "GitRepository", "name": "repo"},
			"path": "./deploy", "prune": true, "selfHeal": false}},
		{"kind": "Provider", "spec": map[string]any{"type": "generic", "address": "https://hooks.example.com/gitsync", "timeout": "15s"}},
		{"kind": "Alert", "spec": map[string]any{"providerRef": map[string]any{"name": "old"}, "eventSeverity": "info",
			"eventSources": []any{map[string]any{"kind": "Application", "name": "*"}}}},
	} {
		old := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "gitsync.dev/v1alpha1", "kind": o["kind"],
			"metadata": map[string]any{"name": "old", "namespace": ns}, "spec": o["spec"]}}
		g.Expect(env.Client.Create(ctx, old)).To(Succeed(), "creating a v1alpha1 %s", o["kind"])
		now := &unstructured.Unstructured{}
		now.SetAPIVersion("gitsync.dev/v1beta1")
		now.SetKind(o["kind"].(string))
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "old"}, now)).To(Succeed(), "reading %s as v1beta1", o["kind"])
		g.Expect(now.Object["spec"]).To(Equal(old.Object["spec"]), "%s: v1beta1 reads what v1alpha1 wrote", o["kind"])
	}

	// The Application, written as v1beta1 (spec, then status), read back as v1alpha1.
	app := &gitsyncv1beta1.Application{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "old"}, app)).To(Succeed())
	g.Expect(app.Spec.Path).To(Equal("./deploy"))
	g.Expect(app.Spec.Prune).To(BeTrue())
	g.Expect(app.Spec.SelfHeal).To(HaveValue(BeFalse()))
	app.Spec.Path = "./overlays/prod"
	g.Expect(env.Client.Update(ctx, app)).To(Succeed())
	apimeta.SetStatusCondition(&app.Status.Conditions, metav1.Condition{Type: gitsyncv1beta1.ReadyCondition,
		Status: metav1.ConditionFalse, Reason: gitsyncv1beta1.ArtifactNotReadyReason, Message: "written as v1beta1"})
	app.Status.LastAttemptedRevision = "main@sha1:0123456789abcdef0123456789abcdef01234567"
	g.Expect(env.Client.Status().Update(ctx, app)).To(Succeed())

	back := &gitsyncv1alpha1.Application{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "old"}, back)).To(Succeed())
	g.Expect(back.APIVersion).To(Or(BeEmpty(), Equal("gitsync.dev/v1alpha1")))
	g.Expect(back.Spec.Path).To(Equal("./overlays/prod"))
	g.Expect(back.Spec.SelfHeal).To(HaveValue(BeFalse()))
	g.Expect(back.Status.LastAttemptedRevision).To(Equal(app.Status.LastAttemptedRevision))
	ready := apimeta.FindStatusCondition(back.Status.Conditions, gitsyncv1beta1.ReadyCondition)
	g.Expect(ready).NotTo(BeNil())
	g.Expect(ready.Message).To(Equal("written as v1beta1"))

	// And written as v1alpha1 again (an old client's update), seen by v1beta1.
	back.Spec.Prune = false
	g.Expect(env.Client.Update(ctx, back)).To(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "old"}, app)).To(Succeed())
	g.Expect(app.Spec.Prune).To(BeFalse())
	lists := map[string]int{}
	for _, v := range []string{"v1alpha1", "v1beta1"} {
		l := &unstructured.UnstructuredList{}
		l.SetAPIVersion("gitsync.dev/" + v)
		l.SetKind("ApplicationList")
		g.Expect(env.Client.List(ctx, l, client.InNamespace(ns))).To(Succeed(), v)
		lists[v] = len(l.Items)
	}
	g.Expect(lists).To(Equal(map[string]int{"v1alpha1": 1, "v1beta1": 1}))
}

// table asks the API server for the given list as a Table, as kubectl get does.
func table(t *testing.T, path string) *metav1.Table {
	t.Helper()
	g := NewWithT(t)
	hc, err := rest.HTTPClientFor(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	req, err := http.NewRequest(http.MethodGet, strings.TrimSuffix(env.Config.Host, "/")+path, nil)
	g.Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Accept", "application/json;as=Table;g=meta.k8s.io;v=v1")
	resp, err := hc.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK), req.URL.String()+": "+string(body))
	tbl := &metav1.Table{}
	g.Expect(json.Unmarshal(body, tbl)).To(Succeed())
	return tbl
}

// `kubectl get gsapp` shows why an Application is not Ready: a MESSAGE column (priority
// 0: in the default output, not only -o wide) with the Ready condition's message, in both
// versions.
func TestApplicationTableHasMessage(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	app := &gitsyncv1beta1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "hello-repo", Namespace: ns},
		Spec: gitsyncv1beta1.ApplicationSpec{SourceRef: gitsyncv1beta1.SourceReference{
			Kind: gitsyncv1beta1.HelmRepositoryKind, Name: "charts"}, Helm: &gitsyncv1beta1.HelmSpec{Chart: "hello"}},
	}
	g.Expect(env.Client.Create(ctx, app)).To(Succeed())
	message := `no version of chart "hello" matches ">=1.0.0"`
	apimeta.SetStatusCondition(&app.Status.Conditions, metav1.Condition{Type: gitsyncv1beta1.ReadyCondition,
		Status: metav1.ConditionFalse, Reason: "ChartNotFound", Message: message})
	g.Expect(env.Client.Status().Update(ctx, app)).To(Succeed())

	for _, v := range []string{"v1beta1", "v1alpha1"} {
		tbl := table(t, fmt.Sprintf("/apis/gitsync.dev/%s/namespaces/%s/applications", v, ns))
		column := -1
		var names []string
		for i, c := range tbl.ColumnDefinitions {
			names = append(names, c.Name)
			if c.Name == "Message" {
				column = i
				g.Expect(c.Priority).To(BeZero(), "%s: Message is in kubectl get's default output", v)
			}
		}
		g.Expect(column).NotTo(Equal(-1), "%s: no Message column in %v", v, names)
		g.Expect(tbl.Rows).To(HaveLen(1), v)
		g.Expect(tbl.Rows[0].Cells[column]).To(Equal(message), v)
	}
}
