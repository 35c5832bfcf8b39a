package impersonate

import (
	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"

	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/health"
)

// withHealthChecks makes the manager judge health as internal/health judges app's
// objects (its CEL spec.healthChecks for their kinds, kstatus for the others; the
// compilations are cached there). Checks that do not compile leave kstatus for every
// kind here: planSync stalls the revision with the compiler's message.
func withHealthChecks(app *gitsyncv1.Application, m *apply.Manager) *apply.Manager {
	judge, _ := health.For(app)
	m.SetJudge(judge)
	return m
}
