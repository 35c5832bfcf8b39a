package notify

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

func TestMatch(t *testing.T) {
	alert := func(mutate func(*gitsyncv1.AlertSpec)) *gitsyncv1.Alert {
		a := &gitsyncv1.Alert{ObjectMeta: metav1.ObjectMeta{Namespace: "team"}, Spec: gitsyncv1.AlertSpec{
			EventSources: []gitsyncv1.EventSource{{Kind: "Application", Name: "*"}},
		}}
		if mutate != nil {
			mutate(&a.Spec)
		}
		return a
	}
	applied := Event{Kind: "Application", Namespace: "team", Name: "web", Type: corev1.EventTypeNormal, Reason: "Applied",
		Message: "revision main@sha1:abc", Labels: map[string]string{"tier": "front"}}
	failed := applied
	failed.Type, failed.Reason, failed.Message = corev1.EventTypeWarning, "BuildFailed", "building ./: bad yaml"

	cases := []struct {
		name  string
		alert *gitsyncv1.Alert
		ev    Event
		want  bool
	}{
		{"all applications, info", alert(nil), applied, true},
		{"error severity drops Normal", alert(func(s *gitsyncv1.AlertSpec) { s.EventSeverity = "error" }), applied, false},
		{"error severity sends Warning", alert(func(s *gitsyncv1.AlertSpec) { s.EventSeverity = "error" }), failed, true},
		{"other namespace", alert(nil), func() Event { e := applied; e.Namespace = "other"; return e }(), false},
		{"kind differs", alert(func(s *gitsyncv1.AlertSpec) { s.EventSources[0].Kind = "GitRepository" }), applied, false},
		{"name differs", alert(func(s *gitsyncv1.AlertSpec) { s.EventSources[0].Name = "api" }), applied, false},
		{"name matches", alert(func(s *gitsyncv1.AlertSpec) { s.EventSources[0].Name = "web" }), applied, true},
		{"labels match", alert(func(s *gitsyncv1.AlertSpec) { s.EventSources[0].MatchLabels = map[string]string{"tier": "front"} }), applied, true},
		{"labels differ", alert(func(s *gitsyncv1.AlertSpec) { s.EventSources[0].MatchLabels = map[string]string{"tier": "back"} }), applied, false},
		{"exclusion", alert(func(s *gitsyncv1.AlertSpec) { s.ExclusionList = []string{"^building"} }), failed, false},
		{"exclusion not matching", alert(func(s *gitsyncv1.AlertSpec) { s.ExclusionList = []string{"^building"} }), applied, true},
		{"inclusion", alert(func(s *gitsyncv1.AlertSpec) { s.InclusionList = []string{"sha1:abc"} }), applied, true},
		{"inclusion not matching", alert(func(s *gitsyncv1.AlertSpec) { s.InclusionList = []string{"sha1:def"} }), applied, false},
		{"suspended", alert(func(s *gitsyncv1.AlertSpec) { s.Suspend = true }), applied, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Match(tc.alert, tc.ev)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Match = %v, want %v", got, tc.want)
			}
		})
	}
	if _, err := Match(alert(func(s *gitsyncv1.AlertSpec) { s.ExclusionList = []string{"("} }), applied); err == nil {
		t.Error("an invalid regex was accepted")
	}
}

func TestRepoAndCommit(t *testing.T) {
	const sha = "0123456789abcdef0123456789abcdef01234567"
	cases := []struct{ url, host, path, commitURL string }{
		{"https://github.com/org/app.git", "github.com", "org/app", "https://github.com/org/app/commit/" + sha},
		{"git@github.com:org/app.git", "github.com", "org/app", "https://github.com/org/app/commit/" + sha},
		{"ssh://git@gitlab.com/group/sub/app.git", "gitlab.com", "group/sub/app", "https://gitlab.com/group/sub/app/-/commit/" + sha},
		{"http://127.0.0.1:3000/org/app", "127.0.0.1:3000", "org/app", ""},
	}
	for _, tc := range cases {
		r, err := ParseRepo(tc.url)
		if err != nil {
			t.Fatalf("%s: %v", tc.url, err)
		}
		if r.Host != tc.host || r.Path != tc.path {
			t.Errorf("%s: got %+v", tc.url, r)
		}
		if got := CommitURL(tc.url, sha); got != tc.commitURL {
			t.Errorf("%s: commit URL %q, want %q", tc.url, got, tc.commitURL)
		}
	}
	if r, _ := ParseRepo("https://gitlab.com/group/sub/app.git"); r.Owner() != "group/sub" || r.Name() != "app" {
		t.Errorf("owner/name of %+v", r)
	}
	if _, err := ParseRepo("file:///tmp/repo"); err == nil {
		t.Error("a path without owner/repository was accepted")
	}
	for rev, want := range map[string]string{"main@sha1:" + sha: sha, "sha1:" + sha: sha, "v1.0.0": "", "main@sha1:abc": ""} {
		if got := Commit(rev); got != want {
			t.Errorf("Commit(%q) = %q, want %q", rev, got, want)
		}
	}
}

func TestRedact(t *testing.T) {
	values := secretValues(map[string][]byte{
		"token":    []byte("s3cr3t-token\n"),
		"identity": []byte("-----BEGIN KEY-----\nAAAAbase64line\n-----END KEY-----"),
		"ca.crt":   []byte("public certificate"),
		"short":    []byte("ab"),
	})
	got := redact("token s3cr3t-token, key line AAAAbase64line, public certificate, ab", values)
	want := "token *****, key line *****, public certificate, ab"
	if got != want {
		t.Errorf("redact = %q, want %q", got, want)
	}
}
