package applicationset

import (
	"fmt"
	"strings"

	"github.com/fluxcd/pkg/runtime/conditions"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// maxNamedNotReady bounds the Applications a not-Ready message names.
const maxNamedNotReady = 3

// notReady says which of the generated Applications (names, sorted) are Ready=False, as
// live (read fresh at the start of the reconcile) says: "1 of 2 Applications not Ready:
// b (BuildFailed)", the first few named; "" when none is. An Application not created yet,
// or whose Ready is Unknown (a sync under way, a rollout's wait), is not counted.
func notReady(generated []string, live []gitsyncv1.Application) string {
	byName := make(map[string]*gitsyncv1.Application, len(live))
	for i := range live {
		byName[live[i].Name] = &live[i]
	}
	var failing []string
	for _, name := range generated {
		a := byName[name]
		if a == nil || !conditions.IsFalse(a, gitsyncv1.ReadyCondition) {
			continue
		}
		failing = append(failing, fmt.Sprintf("%s (%s)", name, conditions.GetReason(a, gitsyncv1.ReadyCondition)))
	}
	if len(failing) == 0 {
		return ""
	}
	named := failing[:min(len(failing), maxNamedNotReady)]
	msg := fmt.Sprintf("%d of %d Applications not Ready: %s", len(failing), len(generated), strings.Join(named, ", "))
	if more := len(failing) - len(named); more > 0 {
		msg += fmt.Sprintf(" and %d more", more)
	}
	return msg
}
