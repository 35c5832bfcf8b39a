package health

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"

	"k8s.io/utils/lru"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/celhealth"
)

// maxCached is how many compiled spec.healthChecks are kept (least recently used go
// first): a sync, every drift check, every tree and every health read ask for them,
// and a tenant who creates Applications (or generations of one) without end must not
// grow the cache with them.
const maxCached = 256

// compiledChecks caches compilations by the content of spec.healthChecks (not by
// Application or generation): Applications with the same checks share one entry, a
// new generation that leaves the checks alone costs no compilation, and an edited
// check is a new key — so each generation's checks are compiled at most once.
var compiledChecks = lru.New(maxCached)

type compilation struct {
	checks *celhealth.Checks
	err    error
}

// For returns the judge of app's objects: its spec.healthChecks (compiled once per
// content while it stays in the cache) for their kinds, kstatus for the others. When
// the checks do not compile, the error names the failing one ("spec.healthChecks[1]
// (Widget) failed: …") and the judge returned judges every kind by kstatus (the sync
// refuses such a spec anyway; a tree still shows something).
func For(app *gitsyncv1.Application) (*Judge, error) {
	checks, err := compile(app)
	return &Judge{checks: checks}, err
}

func compile(app *gitsyncv1.Application) (*celhealth.Checks, error) {
	if app == nil || len(app.Spec.HealthChecks) == 0 {
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
	checks := make([]celhealth.Check, len(app.Spec.HealthChecks))
	for i, c := range app.Spec.HealthChecks {
		checks[i] = celhealth.Check{APIVersion: c.APIVersion, Kind: c.Kind, Current: c.Current, InProgress: c.InProgress, Failed: c.Failed}
	}
	compiled, err := celhealth.Compile(checks)
	if err != nil {
		compiled, err = nil, fmt.Errorf("spec.%w", err)
	}
	compiledChecks.Add(key, compilation{checks: compiled, err: err})
	return compiled, err
}
