package appset

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

func templateSet(name string, spec gitsyncv1.ApplicationSpec) *gitsyncv1.ApplicationSet {
	return &gitsyncv1.ApplicationSet{
		ObjectMeta: metav1.ObjectMeta{Name: "fleet", Namespace: "team", UID: "uid-1"},
		Spec: gitsyncv1.ApplicationSetSpec{Template: gitsyncv1.ApplicationSetTemplate{
			Metadata: gitsyncv1.ApplicationSetTemplateMeta{Name: name, Labels: map[string]string{"cluster": "{{ .name }}"},
				Annotations: map[string]string{"note": "from {{ .path.path }}"}},
			Spec: spec,
		}},
	}
}

func dirAndCluster(dir, cluster string) Params {
	return Params{"path": pathParams(dir), "name": cluster}
}

func TestTemplateMakesApplications(t *testing.T) {
	set := templateSet("{{ .path.basename }}-{{ .name }}", gitsyncv1.ApplicationSpec{
		SourceRef:       gitsyncv1.SourceReference{Kind: "GitRepository", Name: "repo"},
		Path:            "{{ .path.path }}",
		Cluster:         &gitsyncv1.ClusterReference{Name: "{{ .name }}"},
		TargetNamespace: "{{ .path.basename }}",
		Prune:           true,
		PinnedRevision:  "main@sha1:whatever",
	})
	apps, err := Applications(set, []Params{dirAndCluster("apps/web", "east"), dirAndCluster("apps/api", "west")})
	if err != nil {
		t.Fatal(err)
	}
	a := apps[0]
	if a.Name != "web-east" || a.Namespace != "team" || a.Spec.Path != "apps/web" || a.Spec.Cluster.Name != "east" ||
		a.Spec.TargetNamespace != "web" || !a.Spec.Prune {
		t.Fatalf("application = %s/%s %+v", a.Namespace, a.Name, a.Spec)
	}
	if a.Labels["cluster"] != "east" || a.Labels[gitsyncv1.ApplicationSetLabel] != "fleet" || a.Annotations["note"] != "from apps/web" {
		t.Fatalf("metadata = %v %v", a.Labels, a.Annotations)
	}
	if a.Spec.PinnedRevision != "" {
		t.Fatal("the template's pinnedRevision must not reach the Application: the set's rollback decides pins")
	}
	if len(a.OwnerReferences) != 1 || a.OwnerReferences[0].UID != "uid-1" || !*a.OwnerReferences[0].Controller {
		t.Fatalf("owner references = %+v", a.OwnerReferences)
	}
	if apps[1].Name != "api-west" {
		t.Fatalf("second = %s", apps[1].Name)
	}
}

func TestTemplateErrors(t *testing.T) {
	spec := gitsyncv1.ApplicationSpec{SourceRef: gitsyncv1.SourceReference{Kind: "GitRepository", Name: "repo"}, Path: "{{ .path.path }}"}
	for _, c := range []struct {
		name, tmpl string
		spec       *gitsyncv1.ApplicationSpec
		sets       []Params
		want       string
	}{
		{name: "missing key", tmpl: "{{ .nosuch }}", sets: []Params{dirAndCluster("a", "x")}, want: "nosuch"},
		{name: "missing nested key", tmpl: "{{ .path.nosuch }}", sets: []Params{dirAndCluster("a", "x")}, want: "nosuch"},
		{name: "bad template", tmpl: "{{ .name ", sets: []Params{dirAndCluster("a", "x")}, want: "parsing the template"},
		{name: "invalid name", tmpl: "{{ .name }}", sets: []Params{dirAndCluster("a", "Not_A_Name")}, want: "metadata.name"},
		{name: "same name twice", tmpl: "{{ .path.basename }}", sets: []Params{dirAndCluster("a/x", "1"), dirAndCluster("b/x", "2")}, want: "both make the Application \"x\""},
		{name: "output bound", tmpl: "{{ range .path.segments }}{{ $.big }}{{ end }}",
			sets: []Params{{"path": pathParams("a/b/c"), "big": strings.Repeat("x", MaxStringBytes/2)}}, want: "longer than"},
		{name: "empty source", tmpl: "{{ .name }}", spec: &gitsyncv1.ApplicationSpec{SourceRef: gitsyncv1.SourceReference{Kind: "GitRepository", Name: "{{ .empty }}"}},
			sets: []Params{{"name": "a", "empty": ""}}, want: "sourceRef.name is empty"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := spec
			if c.spec != nil {
				s = *c.spec
			}
			set := templateSet(c.tmpl, s)
			set.Spec.Template.Metadata.Labels, set.Spec.Template.Metadata.Annotations = nil, nil
			_, err := Applications(set, c.sets)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one containing %q", err, c.want)
			}
		})
	}
}
