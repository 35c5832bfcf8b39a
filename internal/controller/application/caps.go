package application

import (
	"time"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// timeout is the Application's spec.timeout within the operator's caps: every wait of a
// sync (the apply, a hook, a wave, health) is bounded by it.
func (r *Reconciler) timeout(app *gitsyncv1.Application) time.Duration {
	d, _ := r.Caps.Timeout("spec.timeout", app.GetTimeout().Duration)
	return d
}
