package v1beta1

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSourceListAndForSource(t *testing.T) {
	single := &Application{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "team"}, Spec: ApplicationSpec{
		SourceRef: SourceReference{Kind: GitRepositoryKind, Name: "repo"}, Path: "./deploy", TargetNamespace: "web"}}
	if got := single.SourceList(); len(got) != 1 || got[0].SourceRef.Name != "repo" || got[0].Path != "./deploy" || got[0].TargetNamespace != "web" {
		t.Errorf("SourceList of spec.sourceRef = %+v", got)
	}
	if single.ForSource(0) != single || single.SourceLabel(0) != "GitRepository/repo" {
		t.Errorf("ForSource/SourceLabel of spec.sourceRef: %p, %q", single.ForSource(0), single.SourceLabel(0))
	}
	multi := &Application{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "team"}, Spec: ApplicationSpec{
		TargetNamespace: "web", Patches: []Patch{{Patch: "x"}},
		Sources: []ApplicationSource{
			{SourceRef: SourceReference{Kind: GitRepositoryKind, Name: "one"}, Path: "./a"},
			{SourceRef: SourceReference{Kind: HelmRepositoryKind, Name: "charts", Namespace: "shared"}, TargetNamespace: "db",
				Helm: &HelmSpec{Chart: "pg"}},
		}}}
	v := multi.ForSource(1)
	if v.MultiSource() || v.Spec.SourceRef.Name != "charts" || v.Spec.Helm.Chart != "pg" || v.Spec.TargetNamespace != "db" ||
		len(v.Spec.Patches) != 1 || multi.Spec.Sources == nil {
		t.Errorf("ForSource(1) = %+v", v.Spec)
	}
	if v0 := multi.ForSource(0); v0.Spec.TargetNamespace != "web" || v0.Spec.Path != "./a" {
		t.Errorf("ForSource(0) keeps spec.targetNamespace: %+v", v0.Spec)
	}
	if got := multi.SourceLabel(1); got != "sources[1] (HelmRepository/shared/charts)" {
		t.Errorf("SourceLabel(1) = %q", got)
	}
}

func TestJoinAndSplitRevision(t *testing.T) {
	joined := JoinRevisions([]string{SourceRevision("GitRepository/a", "main@sha1:1"), SourceRevision("GitRepository/a", "main@sha1:1"),
		SourceRevision("HelmRepository/charts", "web@1.0.0")})
	if joined != "GitRepository/a@main@sha1:1;HelmRepository/charts@web@1.0.0" {
		t.Fatalf("JoinRevisions = %q", joined)
	}
	want := []SourceRevisionEntry{{Source: "GitRepository/a", Revision: "main@sha1:1"}, {Source: "HelmRepository/charts", Revision: "web@1.0.0"}}
	if got := SplitRevision(joined); !reflect.DeepEqual(got, want) {
		t.Errorf("SplitRevision = %+v", got)
	}
	if got := SplitRevision("main@sha1:1"); !reflect.DeepEqual(got, []SourceRevisionEntry{{Revision: "main@sha1:1"}}) {
		t.Errorf("SplitRevision of one source = %+v", got)
	}
	if SplitRevision("") != nil {
		t.Error("SplitRevision of nothing is not empty")
	}
}

func TestRevisionOf(t *testing.T) {
	multi := &Application{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "team"}, Spec: ApplicationSpec{
		Sources: []ApplicationSource{
			{SourceRef: SourceReference{Kind: GitRepositoryKind, Name: "one"}},
			{SourceRef: SourceReference{Kind: OCIRepositoryKind, Name: "art", Namespace: "shared"}},
			{SourceRef: SourceReference{Kind: GitRepositoryKind, Name: "one"}, Path: "./b"},
		}}}
	rev := "GitRepository/one@main@sha1:1;OCIRepository/shared/art@1.0.0@sha256:2"
	for i, want := range []string{"main@sha1:1", "1.0.0@sha256:2", "main@sha1:1"} {
		if got := multi.RevisionOf(i, rev); got != want {
			t.Errorf("RevisionOf(%d) = %q, want %q", i, got, want)
		}
	}
	if got := multi.RevisionOf(1, "GitRepository/one@main@sha1:1"); got != "" {
		t.Errorf("RevisionOf a source the revision does not name = %q", got)
	}
	single := &Application{Spec: ApplicationSpec{SourceRef: SourceReference{Kind: GitRepositoryKind, Name: "one"}}}
	if got := single.RevisionOf(0, "main@sha1:1"); got != "main@sha1:1" {
		t.Errorf("RevisionOf with spec.sourceRef = %q", got)
	}
}
