package notify

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// Events of each source kind and of chart Applications: what an Alert matches on and
// what a message shows as the revision.
func TestFromObjectSources(t *testing.T) {
	const sha = "0123456789abcdef0123456789abcdef01234567"
	meta := metav1.ObjectMeta{Namespace: "team", Name: "charts", Labels: map[string]string{"tier": "infra"}}
	helmRepo := &gitsyncv1.HelmRepository{ObjectMeta: meta,
		Status: gitsyncv1.HelmRepositoryStatus{Artifact: &gitsyncv1.Artifact{Revision: "sha256:abc"}}}
	chartApp := &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web"},
		Spec:   gitsyncv1.ApplicationSpec{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.HelmRepositoryKind, Name: "charts"}},
		Status: gitsyncv1.ApplicationStatus{LastAttemptedRevision: "web@1.2.0"}}
	gitChart := &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "hello"},
		Spec: gitsyncv1.ApplicationSpec{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "repo"}},
		Status: gitsyncv1.ApplicationStatus{LastAttemptedRevision: "main@sha1:" + sha,
			Sync: &gitsyncv1.SyncInfo{Revision: "main@sha1:" + sha, Chart: "hello", ChartVersion: "0.1.0"}}}
	ociRepo := &gitsyncv1.OCIRepository{ObjectMeta: meta,
		Status: gitsyncv1.OCIRepositoryStatus{Artifact: &gitsyncv1.OCIArtifact{Revision: "1.0.0@sha256:abc"}}}
	cases := []struct {
		name                                string
		obj                                 any
		kind, sourceKind, rev, chart, chVer string
		fact                                string
	}{
		{"helm repository", helmRepo, gitsyncv1.HelmRepositoryKind, gitsyncv1.HelmRepositoryKind, "sha256:abc", "", "", "revision: sha256:abc"},
		{"oci repository", ociRepo, gitsyncv1.OCIRepositoryKind, gitsyncv1.OCIRepositoryKind, "1.0.0@sha256:abc", "", "", "revision: 1.0.0@sha256:abc"},
		{"chart of a helm repository", chartApp, gitsyncv1.ApplicationKind, gitsyncv1.HelmRepositoryKind, "web@1.2.0", "web", "1.2.0", "revision: web@1.2.0"},
		{"chart in git", gitChart, gitsyncv1.ApplicationKind, gitsyncv1.GitRepositoryKind, "main@sha1:" + sha, "hello", "0.1.0", "chart: hello@0.1.0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev, ok := FromObject(tc.obj, corev1.EventTypeNormal, "Applied", "Sync", "done")
			if !ok {
				t.Fatal("not routed")
			}
			if ev.Kind != tc.kind || ev.SourceKind != tc.sourceKind || ev.Revision != tc.rev || ev.Chart != tc.chart || ev.ChartVersion != tc.chVer {
				t.Errorf("event = %+v", ev)
			}
			if text := (Message{Event: ev}).text(); !strings.Contains(text, tc.fact) {
				t.Errorf("message %q lacks %q", text, tc.fact)
			}
		})
	}
	ev, _ := FromObject(helmRepo, corev1.EventTypeWarning, gitsyncv1.FetchFailedReason, "Fetch", "503")
	alert := &gitsyncv1.Alert{ObjectMeta: metav1.ObjectMeta{Namespace: "team"}, Spec: gitsyncv1.AlertSpec{
		EventSources: []gitsyncv1.EventSource{{Kind: gitsyncv1.HelmRepositoryKind, Name: "*", MatchLabels: map[string]string{"tier": "infra"}}}}}
	if ok, err := Match(alert, ev); err != nil || !ok {
		t.Errorf("an Alert of HelmRepositories does not send its event: %v %v", ok, err)
	}
	alert.Spec.EventSources[0].Kind = gitsyncv1.GitRepositoryKind
	if ok, _ := Match(alert, ev); ok {
		t.Error("an Alert of GitRepositories sends a HelmRepository's event")
	}
}

// A Cluster's reachability events are routed by kind, name and labels.
func TestFromObjectCluster(t *testing.T) {
	cl := &gitsyncv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "prod", Labels: map[string]string{"env": "prod"}}}
	ev, ok := FromObject(cl, corev1.EventTypeWarning, gitsyncv1.ClusterUnreachableReason, "Probe", "probing https://prod: connection refused")
	if !ok {
		t.Fatal("a Cluster's event is not routed")
	}
	if ev.Subject() != "Cluster/team/prod" || ev.Labels["env"] != "prod" || ev.Severity() != gitsyncv1.SeverityError || ev.Revision != "" {
		t.Fatalf("event = %+v", ev)
	}
}

// An event of an Application of spec.sources names every source and its own revision;
// its message lists them.
func TestFromObjectSeveralSources(t *testing.T) {
	sha := strings.Repeat("a", 40)
	app := &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "shop"},
		Spec: gitsyncv1.ApplicationSpec{Sources: []gitsyncv1.ApplicationSource{
			{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.HelmRepositoryKind, Name: "charts"}, Helm: &gitsyncv1.HelmSpec{Chart: "redis"}},
			{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "shop"}, Path: "./a"},
			{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "shop"}, Path: "./b"},
		}},
		Status: gitsyncv1.ApplicationStatus{LastAttemptedRevision: "HelmRepository/charts@redis@19.6.4;GitRepository/shop@main@sha1:" + sha}}
	ev, ok := FromObject(app, corev1.EventTypeNormal, "Applied", "Sync", "done")
	if !ok {
		t.Fatal("not routed")
	}
	want := []EventSource{
		{Kind: gitsyncv1.HelmRepositoryKind, Namespace: "team", Name: "charts", ID: "HelmRepository/charts", Revision: "redis@19.6.4"},
		{Kind: gitsyncv1.GitRepositoryKind, Namespace: "team", Name: "shop", ID: "GitRepository/shop", Revision: "main@sha1:" + sha},
	}
	if !reflect.DeepEqual(ev.Sources, want) || !ev.Joined() || ev.Source != "" {
		t.Errorf("sources = %+v (source %q)", ev.Sources, ev.Source)
	}
	m := Message{Event: ev, Sources: []SourceFact{{Source: "GitRepository/shop", Revision: "main@sha1:" + sha, CommitURL: "https://github.com/org/shop/commit/" + sha}}}
	if text := m.text(); !strings.Contains(text, "source GitRepository/shop: main@sha1:"+sha+" (https://github.com/org/shop/commit/"+sha+")") {
		t.Errorf("message %q does not name the source", text)
	}
	if meta := genericBody(m).Metadata; meta["revision.GitRepository/shop"] != "main@sha1:"+sha || meta["commitURL.GitRepository/shop"] == "" {
		t.Errorf("generic metadata = %v", meta)
	}
	single, _ := FromObject(&gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web"},
		Spec:   gitsyncv1.ApplicationSpec{SourceRef: gitsyncv1.SourceReference{Name: "repo"}},
		Status: gitsyncv1.ApplicationStatus{LastAttemptedRevision: "main@sha1:" + sha}}, corev1.EventTypeNormal, "Applied", "Sync", "done")
	if single.Joined() || len(single.Sources) != 1 || single.Sources[0].Kind != gitsyncv1.GitRepositoryKind || single.Source != "repo" {
		t.Errorf("single source event = %+v", single)
	}
}
