package health

import (
	"slices"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// Status is the health of an object or of a set of objects: the values of the API's
// status.health.status.
type Status string

// The statuses, with the API's values.
const (
	// Healthy: the object is what it should be (kstatus Current, a CEL check's current,
	// a hook that succeeded).
	Healthy Status = gitsyncv1.HealthStatusHealthy
	// Progressing: on its way (kstatus InProgress or Terminating, a CEL check's
	// inProgress or no expression true yet, a hook still running).
	Progressing Status = gitsyncv1.HealthStatusProgressing
	// Degraded: failed (kstatus Failed, a CEL check's failed, a hook that failed).
	Degraded Status = gitsyncv1.HealthStatusDegraded
	// Missing: applied, yet not found in the cluster.
	Missing Status = gitsyncv1.HealthStatusMissing
	// Unknown: not judged (a CEL check that errs or goes over its bounds, kstatus unable
	// to compute, an object that may not be read).
	Unknown Status = gitsyncv1.HealthStatusUnknown
)

// order ranks the statuses from best to worst; worst wins in Aggregate. A known failure
// outranks not knowing: Degraded is worst (it fails a wait at once, and someone must
// act), then Missing (an applied object is gone: the sync fails with ObjectsMissing,
// which an Unknown neighbour must not hide), then Unknown (no verdict: it must not mask
// a verdict that is one), then Progressing (it resolves itself), then Healthy. The API's
// comment on the HealthStatus constants (api/v1beta1, copied to api/v1alpha1) states the same
// order, and TestOrderIsTheAPIs holds them together. (gitops-engine ranks Unknown
// worst; here an object whose check errs must not hide a Deployment that failed.)
var order = []Status{Healthy, Progressing, Unknown, Missing, Degraded}

// Order returns the statuses from best to worst.
func Order() []Status { return slices.Clone(order) }

// rank is s's place in order; a value that is no Status ranks as Unknown.
func (s Status) rank() int {
	if i := slices.Index(order, s); i >= 0 {
		return i
	}
	return slices.Index(order, Unknown)
}

// Worse tells whether s is worse than other.
func (s Status) Worse(other Status) bool { return s.rank() > other.rank() }
