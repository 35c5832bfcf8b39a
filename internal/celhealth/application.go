package celhealth

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/lru"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// maxCached is how many compiled spec.healthChecks are kept (least recently used go
// first): a sync, every drift check and every health read ask for them, and a tenant
// who creates Applications (or generations of one) without end must not grow the cache
// with them.
const maxCached = 256

// compiledChecks caches compilations by the content of spec.healthChecks (not by
// Application): Applications with the same checks share one entry, and an edited
// check is a new key.
var compiledChecks = lru.New(maxCached)

type compilation struct {
	checks *Checks
	err    error
}

// ForApplication compiles app's spec.healthChecks (nil, nil when it has none), once per
// content while it stays in the cache. The error names the failing check
// ("spec.healthChecks[1].failed: …").
func ForApplication(app *gitsyncv1.Application) (*Checks, error) {
	if len(app.Spec.HealthChecks) == 0 {
		return nil, nil
	}
	raw, err := json.Marshal(app.Spec.HealthChecks)
	if err != nil {
		return nil, fmt.Errorf("spec.healthChecks: %w", err)
	}
	key := sha256.Sum256(raw)
	if c, ok := compiledChecks.Get(key); ok {
		return c.(compilation).checks, c.(compilation).err
	}
	checks := make([]Check, len(app.Spec.HealthChecks))
	for i, c := range app.Spec.HealthChecks {
		checks[i] = Check{APIVersion: c.APIVersion, Kind: c.Kind, Current: c.Current, InProgress: c.InProgress, Failed: c.Failed}
	}
	compiled, err := Compile(checks)
	if err != nil {
		compiled, err = nil, fmt.Errorf("spec.%w", err)
	}
	compiledChecks.Add(key, compilation{checks: compiled, err: err})
	return compiled, err
}

// Judge is obj's health by the checks, as status.health reports it (the HealthStatus
// constants of api/v1alpha1: Healthy, Degraded, Progressing, or Unknown when an
// expression fails or goes over its bounds), and handled false when no check is of
// obj's kind (nil Checks handle nothing).
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
