package operations

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

func TestChangedSources(t *testing.T) {
	git := func(name string) gitsyncv1.ApplicationSource {
		return gitsyncv1.ApplicationSource{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: name}}
	}
	multi := &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "team"},
		Spec:   gitsyncv1.ApplicationSpec{Sources: []gitsyncv1.ApplicationSource{git("a"), git("b")}},
		Status: gitsyncv1.ApplicationStatus{LastAppliedRevision: "GitRepository/a@main@sha1:1;GitRepository/b@main@sha1:2"}}
	got := ChangedSources(multi, "GitRepository/a@main@sha1:1;GitRepository/b@main@sha1:3", nil)
	if want := []SourceChange{{Source: "GitRepository/b", From: "main@sha1:2", To: "main@sha1:3"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("ChangedSources of spec.sources = %+v, want %+v", got, want)
	}
	// One source with valuesFilesFrom: the chart did not move, the values did.
	chart := &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "team"},
		Spec: gitsyncv1.ApplicationSpec{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.HelmRepositoryKind, Name: "charts"}},
		Status: gitsyncv1.ApplicationStatus{LastAppliedRevision: "web@1.0.0",
			ValuesRevisions: []string{"GitRepository/values@main@sha1:1"}}}
	got = ChangedSources(chart, "web@1.0.0", []string{"GitRepository/values@main@sha1:2", "GitRepository/more@main@sha1:9"})
	want := []SourceChange{{Source: "GitRepository/values", From: "main@sha1:1", To: "main@sha1:2"},
		{Source: "GitRepository/more", To: "main@sha1:9"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ChangedSources of valuesFilesFrom = %+v, want %+v", got, want)
	}
	if got := ChangedSources(chart, "web@1.1.0", chart.Status.ValuesRevisions); len(got) != 1 || got[0].Source != "HelmRepository/charts" {
		t.Errorf("ChangedSources of a new chart = %+v", got)
	}
}

func TestSourceCells(t *testing.T) {
	sha := "0123456789abcdef0123456789abcdef01234567"
	if got := ShortRevision("main@sha1:" + sha); got != "main@sha1:0123456" {
		t.Errorf("ShortRevision = %q", got)
	}
	if got := RevisionCell("GitRepository/a@main@sha1:" + sha + ";HelmRepository/charts@web@1.0.0"); got != "a@main@sha1:0123456,charts@web@1.0.0" {
		t.Errorf("RevisionCell = %q", got)
	}
	app := &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: "team"}}
	for i := 0; i < 6; i++ {
		app.Spec.Sources = append(app.Spec.Sources, gitsyncv1.ApplicationSource{
			SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "repository-" + string(rune('a'+i))}})
	}
	if got := SourceSummary(app); got != "6 sources" {
		t.Errorf("SourceSummary of six = %q", got)
	}
	app.Spec.Sources = app.Spec.Sources[:2]
	if got := SourceSummary(app); got != "GitRepository/repository-a,GitRepository/repository-b" {
		t.Errorf("SourceSummary of two = %q", got)
	}
}
