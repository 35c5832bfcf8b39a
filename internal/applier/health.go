package applier

import (
	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"

	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/celhealth"
)

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

// HealthChecks returns the Application's compiled spec.healthChecks (nil without any):
// the applier is asked for a Manager on every sync and every drift check, and
// celhealth keeps the compilations in a bounded cache, by content (an unbounded map by
// Application UID grew with every Application ever seen).
func HealthChecks(app *gitsyncv1.Application) (*celhealth.Checks, error) {
	return celhealth.ForApplication(app)
}
