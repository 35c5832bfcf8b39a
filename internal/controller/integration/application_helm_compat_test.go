package integration

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	kubelet "github.com/gitsync-dev/gitsync/internal/demo/standin"
)

// Charts that helm install accepts sync: a document separator glued to the next line by
// whitespace chomping; and hooks fire as with helm, pre-install on the first sync only,
// pre-upgrade on later revisions only.
func TestApplicationHelmChartsAsHelmInstallsThem(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	hookJob := func(name, event string) string {
		return `apiVersion: batch/v1
kind: Job
metadata:
  name: ` + name + `
  annotations: {helm.sh/hook: ` + event + `, helm.sh/hook-delete-policy: before-hook-creation}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
`
	}
	files := map[string]string{
		"app/Chart.yaml":  "apiVersion: v2\nname: app\nversion: 0.1.0\n",
		"app/values.yaml": "greeting: hello\n",
		"app/templates/glued.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: greeting
data:
  greeting: {{ .Values.greeting | quote }}
---
{{- if true -}}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: glued
{{- end }}
`,
		"app/templates/hooks.yaml": hookJob("create-db", "pre-install") + "---\n" + hookJob("migrate", "pre-upgrade"),
	}
	f, sha := newAppFixture(t, files)
	f.app("app", func(a *gitsyncv1.Application) { a.Spec.Path = "app" })

	createDB := f.waitHookJob("app", "create-db")
	g.Expect(kubelet.FinishJob(ctx, env.Client, f.ns, createDB.Name, true)).To(Succeed())
	app := f.waitApplied("app", sha)
	g.Expect(app.Status.Hooks).To(ConsistOf(HaveField("Name", "create-db")))
	g.Expect(f.configMap(g, "greeting").Data).To(HaveKeyWithValue("greeting", "hello"))
	g.Expect(f.exists(g, &corev1.ServiceAccount{}, "glued")).To(BeTrue())

	// A new revision is an upgrade: migrate runs, create-db does not run again.
	files["app/values.yaml"] = "greeting: hello again\n"
	sha = f.repo.Commit("main", "new greeting", files)
	migrate := f.waitHookJob("app", "migrate")
	g.Expect(kubelet.FinishJob(ctx, env.Client, f.ns, migrate.Name, true)).To(Succeed())
	app = f.waitApplied("app", sha)
	g.Expect(app.Status.Hooks).To(ConsistOf(HaveField("Name", "migrate")))
	g.Expect(f.configMap(g, "greeting").Data).To(HaveKeyWithValue("greeting", "hello again"))
	job := &batchv1.Job{}
	g.Consistently(func(g Gomega) {
		g.Expect(f.exists(g, job, "create-db")).To(BeTrue())
		g.Expect(job.UID).To(Equal(createDB.UID), "the pre-install hook did not run again")
	}, time.Second, 200*time.Millisecond).Should(Succeed())
}
