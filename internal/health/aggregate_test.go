package health

import (
	"testing"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	. "github.com/onsi/gomega"
)

func TestAggregate(t *testing.T) {
	// obj is an object as kstatus judged it.
	obj := func(subject string, s status.Status, msg string) Object {
		return Object{Subject: subject, Result: Result{Status: ofKstatus(s), Reason: string(s), Message: msg}}
	}
	tests := []struct {
		name        string
		objs        []Object
		wantStatus  Status
		wantMessage string
	}{
		{name: "no objects", wantStatus: Healthy, wantMessage: "no objects"},
		{
			name:       "all current",
			objs:       []Object{obj("A", status.CurrentStatus, "ok"), obj("B", status.CurrentStatus, "ok")},
			wantStatus: Healthy, wantMessage: "all 2 objects are healthy",
		},
		{
			name:       "in progress beats current",
			objs:       []Object{obj("A", status.CurrentStatus, ""), obj("B", status.InProgressStatus, "Replicas: 0/1")},
			wantStatus: Progressing, wantMessage: "B: Replicas: 0/1",
		},
		{
			name:       "terminating is progressing",
			objs:       []Object{obj("A", status.TerminatingStatus, "Resource scheduled for deletion")},
			wantStatus: Progressing, wantMessage: "A: Resource scheduled for deletion",
		},
		{
			name:       "unknown beats progressing",
			objs:       []Object{obj("A", status.InProgressStatus, "x"), obj("B", status.UnknownStatus, "")},
			wantStatus: Unknown, wantMessage: "B: Unknown (1 more objects not healthy)",
		},
		{
			name:       "missing beats unknown",
			objs:       []Object{obj("A", status.NotFoundStatus, "not found"), obj("B", status.UnknownStatus, "y")},
			wantStatus: Missing, wantMessage: "A: not found (1 more objects not healthy)",
		},
		{
			name: "degraded is worst",
			objs: []Object{
				obj("A", status.NotFoundStatus, "not found"), obj("B", status.FailedStatus, "Progress deadline exceeded"),
				obj("C", status.CurrentStatus, ""), obj("D", status.FailedStatus, "second"),
			},
			wantStatus: Degraded, wantMessage: "B: Progress deadline exceeded (2 more objects not healthy)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			h := Aggregate(tt.objs)
			g.Expect(h.Status).To(Equal(tt.wantStatus))
			g.Expect(h.Message).To(Equal(tt.wantMessage))
			g.Expect(h.Objects).To(HaveLen(len(tt.objs)))
		})
	}
}

// A wait names an object by its judge's word and message.
func TestObjectString(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Object{Subject: "Deployment/ns/web", Result: Result{Status: Degraded, Reason: "Failed", Message: "Progress deadline exceeded"}}.String()).
		To(Equal("Deployment/ns/web (Failed: Progress deadline exceeded)"))
	g.Expect(Object{Subject: "ConfigMap/ns/c", Result: NotFound()}.String()).To(Equal("ConfigMap/ns/c (NotFound: not found)"))
	g.Expect(Object{Subject: "X/ns/x", Result: Result{Status: Progressing}}.String()).To(Equal("X/ns/x (Progressing)"))
}
