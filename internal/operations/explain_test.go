package operations

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

func cond(typ string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg}
}

// healthyApp is Ready, Synced and Healthy at rev.
func healthyApp() *gitsyncv1.Application {
	rev := "main@sha1:" + strings.Repeat("a", 40)
	return &gitsyncv1.Application{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web", Generation: 3},
		Status: gitsyncv1.ApplicationStatus{
			ObservedGeneration: 3,
			Conditions: []metav1.Condition{cond(gitsyncv1.ReadyCondition, metav1.ConditionTrue, "Succeeded", "applied"),
				cond(gitsyncv1.HealthyCondition, metav1.ConditionTrue, "Succeeded", "")},
			Sync:                &gitsyncv1.SyncInfo{Status: gitsyncv1.SyncStatusSynced, Revision: rev},
			Health:              &gitsyncv1.HealthInfo{Status: gitsyncv1.HealthStatusHealthy},
			LastAppliedRevision: rev,
		},
	}
}

var readySource = &Status{Kind: "GitRepository", Namespace: "team", Name: "repo", Ready: "True"}

func TestExplain(t *testing.T) {
	off := false
	tests := []struct {
		name   string
		change func(*gitsyncv1.Application)
		deps   []Status
		src    *Status
		want   []string // each a substring of one reason, in order; nil: OK
	}{
		{name: "healthy", change: func(*gitsyncv1.Application) {}, src: readySource},
		{name: "build failed", src: readySource, change: func(a *gitsyncv1.Application) {
			a.Status.Conditions[0] = cond(gitsyncv1.ReadyCondition, metav1.ConditionFalse, gitsyncv1.BuildFailedReason, "building ./app:\nbroken.yaml: yaml error")
			a.Status.Conditions = append(a.Status.Conditions, cond(gitsyncv1.StalledCondition, metav1.ConditionTrue, gitsyncv1.BuildFailedReason, "broken.yaml"))
			a.Status.Sync.Status = gitsyncv1.SyncStatusOutOfSync
			a.Status.Sync.Revision = "main@sha1:" + strings.Repeat("b", 40)
		}, want: []string{"stalled (BuildFailed): broken.yaml", "Ready=False (BuildFailed): building ./app: broken.yaml: yaml error",
			"OutOfSync: the cluster is not at revision main@sha1:bbbb"}},
		{name: "waiting, with a running hook", src: readySource, change: func(a *gitsyncv1.Application) {
			a.Status.Conditions = append(a.Status.Conditions, cond(gitsyncv1.ReconcilingCondition, metav1.ConditionTrue, "Progressing", "waiting for PreSync hook Job/team/migrate"))
			a.Status.Hooks = []gitsyncv1.HookStatus{{Kind: "Job", Namespace: "team", Name: "migrate", Phase: "PreSync", Result: "Running", Revision: "r2"}}
		}, want: []string{"a sync is in progress (Progressing): waiting for PreSync hook Job/team/migrate", "hook Job/team/migrate (PreSync, revision r2) is still running"}},
		{name: "failed hook", src: readySource, change: func(a *gitsyncv1.Application) {
			a.Status.Conditions[0] = cond(gitsyncv1.ReadyCondition, metav1.ConditionFalse, gitsyncv1.HookFailedReason, "PreSync hook failed")
			a.Status.Hooks = []gitsyncv1.HookStatus{{Kind: "Job", Namespace: "team", Name: "migrate", Phase: "PreSync", Result: "Failed", Message: "BackoffLimitExceeded", Revision: "r2"}}
		}, want: []string{"Ready=False (HookFailed)", "hook Job/team/migrate (PreSync, revision r2) failed: BackoffLimitExceeded"}},
		{name: "dependency not ready and unreadable", src: readySource, change: func(a *gitsyncv1.Application) {
			a.Status.Conditions[0] = cond(gitsyncv1.ReadyCondition, metav1.ConditionFalse, gitsyncv1.DependencyNotReadyReason, "dependency team/db is not ready")
		}, deps: []Status{{Kind: "Application", Namespace: "team", Name: "db", Ready: "False", Reason: "HealthCheckFailed", Message: "timed out"},
			{Kind: "Application", Namespace: "team", Name: "cache", Error: `applications.gitsync.dev "cache" not found`}},
			want: []string{"Ready=False (DependencyNotReady)", "dependsOn team/db is not Ready (HealthCheckFailed): timed out",
				`dependsOn team/cache cannot be read: applications.gitsync.dev "cache" not found`}},
		{name: "source failing", src: &Status{Kind: "GitRepository", Namespace: "team", Name: "repo", Ready: "False", Reason: "AuthenticationFailed", Message: "401"},
			change: func(*gitsyncv1.Application) {}, want: []string{"source GitRepository team/repo is not Ready (AuthenticationFailed): 401"}},
		{name: "suspended source", src: &Status{Kind: "GitRepository", Namespace: "team", Name: "repo", Ready: "True", Suspended: true},
			change: func(*gitsyncv1.Application) {}, want: []string{"source GitRepository team/repo is suspended"}},
		{name: "drift reported, selfHeal off", src: readySource, change: func(a *gitsyncv1.Application) {
			a.Spec.SelfHeal = &off
			a.Status.Drift = []gitsyncv1.DriftedObject{{Object: "Deployment/team/web", Fields: []string{"/spec/replicas"},
				Managers: []string{"kubectl-edit"}, DetectedAt: metav1.NewTime(time.Now())}}
		}, want: []string{"Deployment/team/web drifted from Git in /spec/replicas, written by kubectl-edit; selfHeal is off, so it is reported, not corrected"}},
		{name: "suspended, pinned, autoSync off, new spec unseen", src: readySource, change: func(a *gitsyncv1.Application) {
			a.Generation = 4
			a.Spec.Suspend = true
			a.Spec.PinnedRevision = "main@sha1:" + strings.Repeat("c", 40)
			a.Spec.AutoSync = &off
			a.Status.Sync.Status = gitsyncv1.SyncStatusOutOfSync
		}, want: []string{"not handled the latest spec yet (generation 4, observed 3)", "suspended (spec.suspend)",
			"pinned to main@sha1:cccc", "OutOfSync: autoSync is off, so revision main@sha1:aaaa"}},
		{name: "degraded", src: readySource, change: func(a *gitsyncv1.Application) {
			a.Status.Health = &gitsyncv1.HealthInfo{Status: gitsyncv1.HealthStatusDegraded, Message: "Deployment/team/web: ImagePullBackOff"}
		}, want: []string{"health Degraded: Deployment/team/web: ImagePullBackOff"}},
		{name: "never reconciled", src: nil, change: func(a *gitsyncv1.Application) {
			a.Status = gitsyncv1.ApplicationStatus{ObservedGeneration: 3}
		}, want: []string{"no Ready condition yet"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := healthyApp()
			tt.change(app)
			var srcs []Status
			if tt.src != nil {
				srcs = []Status{*tt.src}
			}
			e := Explain(app, tt.deps, srcs)
			if tt.want == nil {
				if !e.OK || len(e.Reasons) != 1 || !strings.Contains(e.Reasons[0], "nothing holds it back") {
					t.Fatalf("Explain = %+v, want OK", e)
				}
				return
			}
			if e.OK {
				t.Fatalf("Explain says OK, want reasons %q", tt.want)
			}
			if len(e.Reasons) != len(tt.want) {
				t.Fatalf("reasons = %q, want %d matching %q", e.Reasons, len(tt.want), tt.want)
			}
			for i, want := range tt.want {
				if !strings.Contains(e.Reasons[i], want) {
					t.Errorf("reason %d = %q, want it to contain %q", i, e.Reasons[i], want)
				}
			}
		})
	}
}
