package imageupdate_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gitsync-dev/gitsync/internal/imageupdate"
	"github.com/gitsync-dev/gitsync/internal/yamlbudget"
)

// fluxDeployment is laid out as Flux's image automation guide writes it, with the odd
// formatting people keep (comments, quotes, flow style, blank lines, CRLF-free).
const fluxDeployment = `# podinfo, managed by image automation
apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo   # the name
  namespace: apps
spec:
  template:
    spec:
      containers:
        - name: podinfo
          image: ghcr.io/stefanprodan/podinfo:5.0.0 # {"$imagepolicy": "flux-system:podinfo"}
          args: [ "--level", "info" ]   # flow style kept

        - name: sidecar
          image: "registry.example/sidecar:1.0"  # {"$imagepolicy": "flux-system:sidecar"}
        - name: untouched
          image: nginx:1.25 # {"$imagepolicy": "flux-system:unknown"}
---
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
images:
- name: podinfo
  newName: ghcr.io/stefanprodan/podinfo # {"$imagepolicy": "flux-system:podinfo:name"}
  newTag: '5.0.0' # {"$imagepolicy": "flux-system:podinfo:tag"}
  digest: sha256:0000 # {"$imagepolicy": "flux-system:podinfo:digest"}
`

func TestRewriteChangesOnlyTheMarkedValues(t *testing.T) {
	values := imageupdate.Values{
		"flux-system:podinfo": {Name: "ghcr.io/stefanprodan/podinfo", Tag: "5.1.4", Digest: "sha256:abcd"},
		"flux-system:sidecar": {Name: "registry.example/sidecar", Tag: "1.2"},
	}
	out, changes, err := imageupdate.Rewrite("deploy/podinfo.yaml", []byte(fluxDeployment), values)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.NewReplacer(
		"podinfo:5.0.0 #", "podinfo:5.1.4@sha256:abcd #",
		`"registry.example/sidecar:1.0"`, `"registry.example/sidecar:1.2"`,
		"newTag: '5.0.0'", "newTag: '5.1.4'",
		"digest: sha256:0000", "digest: sha256:abcd",
	).Replace(fluxDeployment)
	if string(out) != want {
		t.Fatalf("rewritten file differs beyond the marked values:\n%s\nwant:\n%s", out, want)
	}
	if len(changes) != 4 {
		t.Fatalf("changes = %+v, want 4 (newName already equal, unknown policy left)", changes)
	}
	if c := changes[0]; c.Object.String() != "Deployment/apps/podinfo" || c.Setter != "flux-system:podinfo" || c.OldValue != "ghcr.io/stefanprodan/podinfo:5.0.0" {
		t.Fatalf("first change = %+v", c)
	}

	again, changes, err := imageupdate.Rewrite("deploy/podinfo.yaml", out, values)
	if err != nil || len(changes) != 0 || string(again) != string(out) {
		t.Fatalf("a second rewrite changed %d fields (err %v)", len(changes), err)
	}
}

func TestRewriteRefusesWhatItCannotWriteSafely(t *testing.T) {
	values := imageupdate.Values{"ns:p": {Name: "img", Tag: "1.0"}}
	block := "image: |\n  img:0.9\n# {\"$imagepolicy\": \"ns:p\"}\nother: x # {\"$imagepolicy\": \"ns:p:tag\"}\nlist:\n- a\n"
	if _, _, err := imageupdate.Rewrite("f.yaml", []byte("a: [ # {\"$imagepolicy\": \"ns:p\"}\n"), values); err == nil {
		t.Fatal("a file that does not parse was rewritten")
	}
	out, changes, err := imageupdate.Rewrite("f.yaml", []byte(block), values)
	if err != nil || len(changes) != 1 || !strings.Contains(string(out), "other: 1.0 #") {
		t.Fatalf("out = %q, changes = %v, err = %v", out, changes, err)
	}
	bomb := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	for i := 0; i < 9; i++ {
		bomb += fmt.Sprintf("b%d: &b%d [*%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s]\n", i, i,
			prev(i), prev(i), prev(i), prev(i), prev(i), prev(i), prev(i), prev(i), prev(i), prev(i))
	}
	bomb += "image: img:0.9 # {\"$imagepolicy\": \"ns:p\"}\n"
	if _, _, err := imageupdate.Rewrite("bomb.yaml", []byte(bomb), values); !errors.Is(err, yamlbudget.ErrTooLarge) {
		t.Fatalf("an alias bomb: err = %v, want the YAML budget's refusal", err)
	}
	hostile := imageupdate.Values{"ns:p": {Name: "img", Tag: "1.0\nkind: Secret"}}
	if _, _, err := imageupdate.Rewrite("f.yaml", []byte("image: img:0.9 # {\"$imagepolicy\": \"ns:p\"}\n"), hostile); err == nil {
		t.Fatal("a value with a newline was written")
	}
}

// prev is the anchor the i-th line of the alias bomb repeats.
func prev(i int) string {
	if i == 0 {
		return "a"
	}
	return fmt.Sprintf("b%d", i-1)
}
