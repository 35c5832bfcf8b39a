package notify

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// discard is the recorder wrapped in the benchmark: it records nothing, so the figure
// is what routing adds to each event a reconciler records.
type discard struct{}

func (discard) Eventf(runtime.Object, runtime.Object, string, string, string, string, ...any) {}
func (discard) AnnotatedEventf(runtime.Object, runtime.Object, map[string]string, string, string, string, string, ...any) {
}

// BenchmarkRecorderEventf is the cost a sync pays per event when the dispatcher is not
// keeping up at all (not started: its intake is full after 1,024 events, and events are
// dropped and counted): it never blocks.
func BenchmarkRecorderEventf(b *testing.B) {
	d := NewDispatcher(nil, nil, Options{})
	r := Recorder{EventRecorder: discard{}, Dispatcher: d}
	app := &gitsyncv1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team", Labels: map[string]string{"tier": "front"}},
		Status:     gitsyncv1.ApplicationStatus{LastAttemptedRevision: "main@sha1:0123456789abcdef0123456789abcdef01234567"},
	}
	b.ReportAllocs()
	for b.Loop() {
		r.Eventf(app, nil, corev1.EventTypeNormal, "Applied", "Sync", "revision %s\n%s", app.Status.LastAttemptedRevision, "ConfigMap/team/web configured")
	}
}
