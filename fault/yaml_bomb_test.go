package fault

import (
	"testing"
	"time"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// TestAliasBombInAKustomization is the bad input that, unguarded, makes the operator
// allocate until it dies (and crash-loop on the same commit, for every tenant). It runs
// alone, after the SIGKILL and API server restart tests and before the parallel ones, so
// that such a crash loop fails this test only.
func TestAliasBombInAKustomization(t *testing.T) {
	sharedOperator(t)
	// Runs after the fixture is suspended: an operator that was already expanding the bomb
	// may still crash once; let that happen before the parallel tests start.
	t.Cleanup(func() { waitSharedSteady(5*time.Second, 30*time.Second) })
	checkBadInput(t, badInput{
		name: "alias bomb listed in a kustomization",
		change: commitFiles(map[string]string{
			"configmaps.yaml":    badConfigMaps,
			"bomb.yaml":          aliasBomb(),
			"kustomization.yaml": kustomization("bomb.yaml"),
		}),
		reasons: []string{gitsyncv1.BuildFailedReason},
		message: `(?i)bomb\.yaml.*(alias|values|nodes)|(alias|values|nodes).*bomb\.yaml`,
	})
}
