package mcp

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// healthyApp is Ready, Synced and Healthy at rev (the Application the server reads).
func healthyApp() *gitsyncv1.Application {
	rev := "main@sha1:" + strings.Repeat("a", 40)
	cond := func(typ string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: "Succeeded"}
	}
	return &gitsyncv1.Application{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web", Generation: 3},
		Status: gitsyncv1.ApplicationStatus{
			ObservedGeneration:  3,
			Conditions:          []metav1.Condition{cond(gitsyncv1.ReadyCondition), cond(gitsyncv1.HealthyCondition)},
			Sync:                &gitsyncv1.SyncInfo{Status: gitsyncv1.SyncStatusSynced, Revision: rev},
			Health:              &gitsyncv1.HealthInfo{Status: gitsyncv1.HealthStatusHealthy},
			LastAppliedRevision: rev,
		},
	}
}
