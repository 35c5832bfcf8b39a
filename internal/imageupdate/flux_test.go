package imageupdate_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gitsync-dev/gitsync/internal/imageupdate"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

// fluxGuideTemplate is the commit message template of Flux's image automation guide.
const fluxGuideTemplate = `Automated image update

Automation name: {{ .AutomationObject }}

Files:
{{ range $filename, $_ := .Changed.FileChanges -}}
- {{ $filename }}
{{ end -}}

Objects:
{{ range $resource, $changes := .Changed.Objects -}}
- {{ $resource.Kind }} {{ $resource.Name }}
  Changes:
{{- range $_, $change := $changes }}
    - {{ $change.OldValue }} -> {{ $change.NewValue }}
{{ end -}}
{{ end -}}
`

// fluxGuideDeployment is podinfo-deployment.yaml as Flux's guide commits it to
// clusters/my-cluster in the fleet-infra repository.
const fluxGuideDeployment = `---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
  namespace: podinfo
spec:
  selector:
    matchLabels:
      app: podinfo
  template:
    metadata:
      labels:
        app: podinfo
    spec:
      containers:
      - name: podinfod
        image: ghcr.io/stefanprodan/podinfo:5.0.0 # {"$imagepolicy": "flux-system:podinfo"}
        imagePullPolicy: IfNotPresent
        ports:
        - containerPort: 9898
          name: http
          protocol: TCP
`

// TestFluxGuideRepositoryWorksUnchanged: the repository, marker and commit template of
// Flux's image automation guide give the commit Flux would make.
func TestFluxGuideRepositoryWorksUnchanged(t *testing.T) {
	srv := gittest.NewServer(t, gittest.Options{})
	repo := srv.CreateRepo("fleet-infra")
	kustomization := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- podinfo-deployment.yaml\n"
	before := repo.Commit("main", "Add podinfo deployment", map[string]string{
		"clusters/my-cluster/podinfo-deployment.yaml": fluxGuideDeployment,
		"clusters/my-cluster/kustomization.yaml":      kustomization,
	})
	res, err := imageupdate.Run(context.Background(), imageupdate.Request{
		URL: srv.HTTPURL("fleet-infra"), CheckoutBranch: "main", Path: "./clusters/my-cluster",
		AuthorName: "fluxcdbot", AuthorEmail: "fluxcdbot@users.noreply.github.com",
		MessageTemplate: fluxGuideTemplate, Automation: "flux-system/flux-system", WorkDir: t.TempDir(),
		Values: imageupdate.Values{"flux-system:podinfo": {Name: "ghcr.io/stefanprodan/podinfo", Tag: "5.2.1"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	bare := repo.Path()
	if got := gitOut(t, bare, nil, "diff", before, res.Commit); strings.Count(got, "\n-") != 2 || strings.Count(got, "\n+") != 2 {
		t.Fatalf("diff is not the one marked line:\n%s", got)
	}
	got := gitOut(t, bare, nil, "show", res.Commit+":clusters/my-cluster/podinfo-deployment.yaml")
	if want := strings.Replace(fluxGuideDeployment, "podinfo:5.0.0", "podinfo:5.2.1", 1); got != want {
		t.Fatalf("deployment after the update:\n%s", got)
	}
	msg := gitOut(t, bare, nil, "log", "-1", "--format=%B", res.Commit)
	for _, want := range []string{
		"Automation name: flux-system/flux-system",
		"- clusters/my-cluster/podinfo-deployment.yaml",
		"- Deployment podinfo",
		"    - ghcr.io/stefanprodan/podinfo:5.0.0 -> ghcr.io/stefanprodan/podinfo:5.2.1",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("commit message lacks %q:\n%s", want, msg)
		}
	}
}
