package notify

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

// Recorder records events as the wrapped recorder does and also hands each event of a
// GitRepository, HelmRepository or Application to the dispatcher (which never blocks).
type Recorder struct {
	recorder.EventRecorder
	Dispatcher *Dispatcher
}

// Eventf records the event and dispatches it.
func (r Recorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.EventRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
	r.dispatch(regarding, eventtype, reason, action, note, args)
}

// AnnotatedEventf records the event and dispatches it.
func (r Recorder) AnnotatedEventf(regarding, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string, args ...any) {
	r.EventRecorder.AnnotatedEventf(regarding, related, annotations, eventtype, reason, action, note, args...)
	r.dispatch(regarding, eventtype, reason, action, note, args)
}

func (r Recorder) dispatch(obj runtime.Object, eventtype, reason, action, note string, args []any) {
	ev, ok := FromObject(obj, eventtype, reason, action, fmt.Sprintf(note, args...))
	if !ok {
		return
	}
	events.WithLabelValues(ev.Kind, ev.Type, ev.Reason).Inc()
	if r.Dispatcher != nil {
		r.Dispatcher.Handle(ev)
	}
}
