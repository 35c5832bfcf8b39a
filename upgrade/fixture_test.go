package upgrade

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1alpha1 "github.com/gitsync-dev/gitsync/api/v1alpha1"
	gitsyncv1beta1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/demo/standin"
)

const (
	pollInterval = 200 * time.Millisecond
	repoName     = "apps"
)

// app is one of the 20 Applications: its name, its path in the repository and how it
// differs from the default.
type app struct {
	name, path string
	// values are the chart's inline values (chart Applications only).
	values string
	// selfHealOff reports drift instead of correcting it.
	selfHealOff bool
}

// applications are 8 of plain YAML, 6 of kustomize, 3 of one local chart (the first with
// a Helm pre-install/pre-upgrade hook) and 3 with PreSync and PostSync Jobs.
func applications() []app {
	var apps []app
	add := func(kind string, n int, mutate func(i int, a *app)) {
		for i := range n {
			a := app{name: fmt.Sprintf("%s-%d", kind, i), path: fmt.Sprintf("./apps/%s-%d", kind, i)}
			if mutate != nil {
				mutate(i, &a)
			}
			apps = append(apps, a)
		}
	}
	add("plain", 8, func(i int, a *app) { a.selfHealOff = i == 1 })
	add("kust", 6, nil)
	add("chart", 3, func(i int, a *app) {
		a.path = "./chart"
		a.values = fmt.Sprintf(`{"hook": %t}`, i == 0)
	})
	add("hooks", 3, nil)
	return apps
}

// files is the repository at a revision: rev is written into every Application's
// ConfigMap, so each revision changes each Application.
func files(rev string) map[string]string {
	out := map[string]string{
		"chart/Chart.yaml":  "apiVersion: v2\nname: upgrade-chart\nversion: 0.1.0\n",
		"chart/values.yaml": fmt.Sprintf("rev: %s\nhook: false\n", rev),
		"chart/templates/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n" +
			"data:\n  rev: {{ .Values.rev | quote }}\n",
		"chart/templates/service.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Release.Name }}\n" +
			"spec:\n  selector:\n    app: {{ .Release.Name }}\n  ports:\n  - name: http\n    port: 80\n",
		"chart/templates/hook.yaml": "{{- if .Values.hook }}\n" +
			job("{{ .Release.Name }}-migrate", "helm.sh/hook: pre-install,pre-upgrade", "helm.sh/hook-delete-policy: before-hook-creation") +
			"{{- end }}\n",
	}
	for _, a := range applications() {
		dir := strings.TrimPrefix(a.path, "./")
		switch {
		case strings.HasPrefix(a.name, "plain-"):
			out[dir+"/configmap.yaml"] = configMap(a.name, rev)
			out[dir+"/service.yaml"] = service(a.name)
			out[dir+"/serviceaccount.yaml"] = "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: " + a.name + "\n"
		case strings.HasPrefix(a.name, "kust-"):
			out[dir+"/kustomization.yaml"] = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" +
				"resources: [configmap.yaml, service.yaml]\n" +
				"labels:\n- pairs: {tier: kust}\n" +
				"configMapGenerator:\n- name: " + a.name + "-gen\n  literals: [rev=" + rev + "]\n"
			out[dir+"/configmap.yaml"] = configMap(a.name, rev)
			out[dir+"/service.yaml"] = service(a.name)
		case strings.HasPrefix(a.name, "hooks-"):
			out[dir+"/configmap.yaml"] = configMap(a.name, rev)
			out[dir+"/presync.yaml"] = job(a.name+"-pre", "gitsync.dev/hook: PreSync", "gitsync.dev/hook-delete-policy: BeforeHookCreation")
			out[dir+"/postsync.yaml"] = job(a.name+"-post", "gitsync.dev/hook: PostSync", "gitsync.dev/hook-delete-policy: BeforeHookCreation")
		}
	}
	return out
}

func configMap(name, rev string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  rev: %q\n", name, rev)
}

func service(name string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata:\n  name: %s\nspec:\n  selector:\n    app: %s\n"+
		"  ports:\n  - name: http\n    port: 80\n", name, name)
}

func job(name string, annotations ...string) string {
	return fmt.Sprintf("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: %s\n  annotations:\n    %s\n"+
		"spec:\n  backoffLimit: 0\n  template:\n    spec:\n      restartPolicy: Never\n"+
		"      containers: [{name: run, image: example.com/migrate:1}]\n", name, strings.Join(annotations, "\n    "))
}

// createApplications creates the GitRepository of url (polled every 3 s) and the 20
// Applications in ns, with only fields that the previous release's CRDs know, as v1alpha1:
// the only version those CRDs serve (constants have one home, api/v1beta1).
func createApplications(t *testing.T, ns, url string) {
	t.Helper()
	ctx := context.Background()
	g := NewWithT(t)
	g.Expect(env.Client.Create(ctx, &gitsyncv1alpha1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: repoName, Namespace: ns},
		Spec: gitsyncv1alpha1.GitRepositorySpec{
			URL:      url,
			Ref:      &gitsyncv1alpha1.GitRepositoryRef{Branch: "main"},
			Interval: &metav1.Duration{Duration: 3 * time.Second},
			Timeout:  &metav1.Duration{Duration: 20 * time.Second},
		},
	})).To(Succeed())
	for _, a := range applications() {
		obj := &gitsyncv1alpha1.Application{
			ObjectMeta: metav1.ObjectMeta{Name: a.name, Namespace: ns},
			Spec: gitsyncv1alpha1.ApplicationSpec{
				SourceRef: gitsyncv1alpha1.SourceReference{Kind: gitsyncv1beta1.GitRepositoryKind, Name: repoName},
				Path:      a.path,
				Prune:     true,
				Timeout:   &metav1.Duration{Duration: time.Minute},
			},
		}
		if a.values != "" {
			obj.Spec.Helm = &gitsyncv1alpha1.HelmSpec{Values: &runtime.RawExtension{Raw: []byte(a.values)}}
		}
		if a.selfHealOff {
			obj.Spec.SelfHeal = new(bool)
		}
		g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
	}
}

// waitAllReady waits until every Application is Ready, applied at revision and has
// observed its generation. An Application whose drift is only reported (selfHeal: false)
// counts as settled with Ready=False/DriftDetected: the meaning of Ready since
// docs/status.md (the previous release said Ready=True beside the drift report).
func waitAllReady(t *testing.T, ns, revision string, timeout time.Duration) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		list := &gitsyncv1alpha1.ApplicationList{}
		g.Expect(env.Client.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
		g.Expect(list.Items).To(HaveLen(len(applications())))
		var pending []string
		for _, a := range list.Items {
			ready := apimeta.FindStatusCondition(a.Status.Conditions, gitsyncv1beta1.ReadyCondition)
			switch {
			case ready == nil:
				pending = append(pending, a.Name+": no Ready condition")
			case ready.Status == metav1.ConditionFalse && ready.Reason == gitsyncv1beta1.DriftDetectedReason &&
				a.Status.LastAppliedRevision == revision && a.Status.ObservedGeneration == a.Generation:
			case ready.Status != metav1.ConditionTrue || a.Status.LastAppliedRevision != revision ||
				a.Status.ObservedGeneration != a.Generation:
				pending = append(pending, fmt.Sprintf("%s: Ready=%s %s at %q: %s", a.Name, ready.Status, ready.Reason,
					a.Status.LastAppliedRevision, ready.Message))
			}
		}
		g.Expect(pending).To(BeEmpty())
	}).WithTimeout(timeout).WithPolling(pollInterval).Should(Succeed())
}

// finishHooks plays the Job controller until ctx ends: every hook Job in ns completes.
func finishHooks(ctx context.Context, ns string) {
	for ctx.Err() == nil {
		jobs := &batchv1.JobList{}
		if err := env.Client.List(ctx, jobs, client.InNamespace(ns)); err == nil {
			for _, j := range jobs.Items {
				if !finished(j) {
					_ = standin.FinishJob(ctx, env.Client, ns, j.Name, true)
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(pollInterval):
		}
	}
}

func finished(j batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// watchedKinds are the kinds that the Applications hold (managed objects and hooks).
var watchedKinds = []schema.GroupVersionKind{
	{Version: "v1", Kind: "ConfigMap"}, {Version: "v1", Kind: "Service"}, {Version: "v1", Kind: "ServiceAccount"},
	{Group: "batch", Version: "v1", Kind: "Job"},
}

// snapshot maps each object of watchedKinds in ns ("Kind/name") to its uid and
// resourceVersion: a write that changed an object, a delete or a new hook shows as a
// difference between two snapshots.
func snapshot(g Gomega, ns string) map[string]string {
	out := map[string]string{}
	for _, gvk := range watchedKinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		g.Expect(env.Client.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
		for _, o := range list.Items {
			out[gvk.Kind+"/"+o.GetName()] = string(o.GetUID()) + "@" + o.GetResourceVersion()
		}
	}
	return out
}

// changes lists what differs between two snapshots.
func changes(before, after map[string]string) []string {
	var out []string
	for k, v := range before {
		switch w, ok := after[k]; {
		case !ok:
			out = append(out, "deleted "+k)
		case w != v:
			out = append(out, "changed "+k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			out = append(out, "created "+k)
		}
	}
	return out
}
