package kit

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// unchanged is the patcher's shortcut: true only when the status patch would send
// nothing, so that the map comparison it skips could not have found a change.
func TestUnchanged(t *testing.T) {
	read := func() *gitsyncv1.Application {
		return &gitsyncv1.Application{
			ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "n", Generation: 3, ResourceVersion: "7"},
			Status: gitsyncv1.ApplicationStatus{
				ObservedGeneration: 3,
				Conditions:         []metav1.Condition{{Type: gitsyncv1.ReadyCondition, Status: metav1.ConditionTrue, Reason: "Succeeded"}},
			},
		}
	}
	cases := []struct {
		name     string
		change   func(*gitsyncv1.Application)
		observed bool
		want     bool
	}{
		{name: "nothing changed", change: func(*gitsyncv1.Application) {}, observed: true, want: true},
		{name: "nothing changed, generation not recorded", change: func(*gitsyncv1.Application) {}, want: true},
		{name: "an empty list where there was none", change: func(a *gitsyncv1.Application) { a.Status.Drift = []gitsyncv1.DriftedObject{} }, observed: true, want: true},
		{name: "a new generation to record", change: func(a *gitsyncv1.Application) { a.Generation = 4 }, observed: true, want: false},
		{name: "a new generation, not recorded by this write", change: func(a *gitsyncv1.Application) { a.Generation = 4; a.Status.ObservedGeneration = 4 }, want: false},
		{name: "a condition changed", change: func(a *gitsyncv1.Application) { a.Status.Conditions[0].Reason = "Progressing" }, observed: true, want: false},
		{name: "a finalizer added", change: func(a *gitsyncv1.Application) { a.Finalizers = []string{gitsyncv1.Finalizer} }, observed: true, want: false},
		{name: "a request handled", change: func(a *gitsyncv1.Application) { a.Status.LastHandledReconcileAt = "now" }, observed: true, want: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := read()
			tc.change(obj)
			if got := unchanged(read(), obj, tc.observed); got != tc.want {
				t.Errorf("unchanged = %v, want %v", got, tc.want)
			}
		})
	}
	// A kind that cannot tell its observed generation takes the long way.
	if unchanged(&metav1.PartialObjectMetadata{}, client.Object(&metav1.PartialObjectMetadata{}), true) {
		t.Error("an object without status.observedGeneration passed as recording it")
	}
}
