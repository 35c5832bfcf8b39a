package kit

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// Capped emits a Warning (reason LimitApplied) for each note of a spec field the
// operator's caps lowered or raised, when tell: the sources tell on a new generation, an
// Application on each apply (a routine resync stops before it).
func Capped(rec recorder.EventRecorder, obj runtime.Object, tell bool, notes ...string) {
	if !tell || rec == nil {
		return
	}
	for _, n := range notes {
		if n != "" {
			rec.Eventf(obj, nil, corev1.EventTypeWarning, gitsyncv1.LimitAppliedReason, "Reconcile", "%s", n)
		}
	}
}
