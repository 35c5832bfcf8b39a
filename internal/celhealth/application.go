package celhealth

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// ForApplication compiles app's spec.healthChecks (nil, nil when it has none). The error
// names the failing check ("spec.healthChecks[1].failed: …").
func ForApplication(app *gitsyncv1.Application) (*Checks, error) {
	if len(app.Spec.HealthChecks) == 0 {
		return nil, nil
	}
	checks := make([]Check, len(app.Spec.HealthChecks))
	for i, c := range app.Spec.HealthChecks {
		checks[i] = Check{APIVersion: c.APIVersion, Kind: c.Kind, Current: c.Current, InProgress: c.InProgress, Failed: c.Failed}
	}
	compiled, err := Compile(checks)
	if err != nil {
		return nil, fmt.Errorf("spec.%w", err)
	}
	return compiled, nil
}

// Judge is obj's health by the checks, as status.health reports it (the HealthStatus
// constants of api/v1alpha1: Healthy, Degraded, Progressing, or Unknown when an
// expression fails), and handled false when no check is of obj's kind (nil Checks
// handle nothing).
func (c *Checks) Judge(obj *unstructured.Unstructured) (status, message string, handled bool) {
	if c == nil || !c.Has(obj.GroupVersionKind()) {
		return "", "", false
	}
	st, err := c.Evaluate(obj)
	if err != nil {
		return gitsyncv1.HealthStatusUnknown, err.Error(), true
	}
	switch st {
	case Current:
		return gitsyncv1.HealthStatusHealthy, "health check: current", true
	case Failed:
		return gitsyncv1.HealthStatusDegraded, "health check: failed", true
	default:
		return gitsyncv1.HealthStatusProgressing, "health check: in progress", true
	}
}
