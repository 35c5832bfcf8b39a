package applier

import (
	"fmt"
	"strings"
	"sync"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"

	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/celhealth"
)

// compileHealthChecks compiles spec.healthChecks (nil when there are none).

// withHealthChecks makes the manager judge the kinds of spec.healthChecks with their
// CEL expressions (kstatus for the others). An expression that does not compile is
// left to planSync, which stalls the revision with the compiler's message.
func withHealthChecks(app *gitsyncv1.Application, m *apply.Manager) *apply.Manager {
	if len(app.Spec.HealthChecks) == 0 {
		return m
	}
	checks, err := HealthChecks(app)
	if err != nil || checks == nil {
		return m
	}
	m.SetHealthCheck(checks.Has, checks.Judge)
	return m
}

// compiled caches the compiled spec.healthChecks per Application generation: the applier
// is asked for a Manager on every sync and every drift check.
var compiled sync.Map // "<uid>/<generation>" -> *celhealth.Checks

// HealthChecks returns the Application's compiled spec.healthChecks (nil without any),
// compiled once per generation.
func HealthChecks(app *gitsyncv1.Application) (*celhealth.Checks, error) {
	key := fmt.Sprintf("%s/%d", app.UID, app.Generation)
	if c, ok := compiled.Load(key); ok {
		return c.(*celhealth.Checks), nil
	}
	checks, err := celhealth.ForApplication(app)
	if err != nil || app.UID == "" {
		return checks, err
	}
	// Keep one entry per Application: drop its older generations.
	prefix := string(app.UID) + "/"
	compiled.Range(func(k, _ any) bool {
		if ks := k.(string); strings.HasPrefix(ks, prefix) {
			compiled.Delete(ks)
		}
		return true
	})
	compiled.Store(key, checks)
	return checks, nil
}
