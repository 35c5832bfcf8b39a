package rollback

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

func TestTarget(t *testing.T) {
	a := "main@sha1:" + strings.Repeat("a", 40)
	b := "main@sha1:" + "abcdef1" + strings.Repeat("0", 33)
	c := "main@sha1:" + "abcdef2" + strings.Repeat("0", 33)
	app := &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team"},
		Status: gitsyncv1.ApplicationStatus{History: []gitsyncv1.SyncHistoryEntry{{Revision: a}, {Revision: b}, {Revision: c}, {Revision: a}}}}
	for _, tc := range []struct{ to, want, err string }{
		{to: a, want: a},
		{to: "aaaaaaa", want: a},
		{to: "sha1:AAAAAAAA", want: a},
		{to: "abcdef1", want: b},
		{to: "abcdef", err: "not in the history"}, // under 7 digits
		{to: "abcdef", err: "not in the history"},
		{to: "", err: "not in the history"},
		{to: "main@sha1:" + strings.Repeat("b", 40), err: "not in the history"},
	} {
		got, err := Target(app, tc.to)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrRefused) {
				t.Errorf("Target(%q) = %q, %v; want an ErrRefused containing %q", tc.to, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Target(%q) = %q, %v; want %q", tc.to, got, err, tc.want)
		}
	}
	// Two revisions share a 6-digit prefix but a 7-digit one names one; "abcdef" + a
	// digit that both have is ambiguous.
	app.Status.History = append(app.Status.History, gitsyncv1.SyncHistoryEntry{Revision: "main@sha1:abcdef1" + strings.Repeat("1", 33)})
	if _, err := Target(app, "abcdef1"); err == nil || !strings.Contains(err.Error(), "ambiguous") {
		t.Errorf("want ambiguous, got %v", err)
	}
	app.Spec.Suspend = true
	if _, err := Target(app, a); err == nil || !strings.Contains(err.Error(), "suspended") {
		t.Errorf("want suspended, got %v", err)
	}
	app.Spec.Suspend = false
	app.Spec.SourceRef.Kind = gitsyncv1.HelmRepositoryKind
	if _, err := Target(app, a); err == nil || !strings.Contains(err.Error(), "pin the chart version instead") {
		t.Errorf("want the chart refusal, got %v", err)
	}
	app.Spec.SourceRef.Kind = gitsyncv1.OCIRepositoryKind
	if _, err := Target(app, a); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "spec.ref.digest") {
		t.Errorf("want the OCI refusal, got %v", err)
	}
}

// An Application of spec.sources has no one commit to pin: refused, saying so.
func TestTargetRefusesSeveralSources(t *testing.T) {
	a := "GitRepository/a@main@sha1:" + strings.Repeat("a", 40) + ";GitRepository/b@main@sha1:" + strings.Repeat("b", 40)
	app := &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team"},
		Spec: gitsyncv1.ApplicationSpec{Sources: []gitsyncv1.ApplicationSource{
			{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "a"}},
			{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "b"}}}},
		Status: gitsyncv1.ApplicationStatus{History: []gitsyncv1.SyncHistoryEntry{{Revision: a}}}}
	got, err := Target(app, a)
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "rollback of a multi-source Application is not supported") {
		t.Fatalf("Target = %q, %v; want a refusal naming multi-source", got, err)
	}
}
