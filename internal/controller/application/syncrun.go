package application

import (
	"context"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/health"
	"github.com/gitsync-dev/gitsync/internal/phase"
	"github.com/gitsync-dev/gitsync/internal/render"
)

// syncRun carries what one reconcile learned from step to step: what it is about (the
// Application, its revision and checkout), what was rendered, what was applied, and the
// state of a run that waits between reconciles.
type syncRun struct {
	app *gitsyncv1.Application
	// log is the reconcile's logger: one info line per sync, hook and failure.
	log      logr.Logger
	started  metav1.Time
	revision string
	// signer is who signed the revision (the source's status.artifact.signer), when the
	// source verifies signatures.
	signer string
	// previous is the inventory of the last sync.
	previous []apply.Entry
	// dir is the checkout (or chart archive) the revision renders from.
	dir string
	// values are the checkouts of spec.helm.valuesFilesFrom's sources (sources.go).
	values valuesSources
	// parts are the sources of spec.sources, each with its checkout (multisource.go);
	// empty with spec.sourceRef (dir is its checkout).
	parts []sourcePart

	rendered
	applied
	inProgress

	// attempted is true once a revision was handed to the apply (it goes in history).
	attempted bool
	// applyTried is true once the objects went to the API server (applied or failed there).
	applyTried bool
	// restored is true when this run gave the drift controller the last applied
	// revision's objects (after a restart).
	restored bool
}

// rendered is what reconcileBuild made of the revision.
type rendered struct {
	objects []*unstructured.Unstructured
	// plan orders the objects: hooks and waves (see planSync).
	plan *phase.Plan
	// chart and chartVersion name the chart, when the path is a Helm chart.
	chart, chartVersion string
	// chartCRDs names the chart's crds/ CRDs and their policy.
	chartCRDs render.Chart
}

// applied is what reconcileApply, reconcilePrune and reconcileHealth did.
type applied struct {
	manager *apply.Manager
	result  *apply.Result
	pruned  []apply.Change
	// pruneSkipped are the objects that left Git and stay because the sync request
	// turned pruning off.
	pruneSkipped []apply.Entry
	// pruneHeld are the objects that left Git and stay because a sibling Application
	// that cannot be rendered might render them; pruneHeldBy names the siblings.
	pruneHeld   []apply.Entry
	pruneHeldBy string
	health      *health.Summary
	// attestation is the digest of the sync's signed attestation (attest_step.go).
	attestation string
}

// inProgress is the state of a sync that may wait between reconciles (resume.go).
type inProgress struct {
	// saveProgress writes status if the step that follows takes long enough to be seen
	// (see mergePatcher.PatchSoon).
	saveProgress func(context.Context)
	// waiting is true when the ordered run yielded to wait for a hook or a wave
	// (resume.go); carried is the State it resumed from, resumedHooks status.hooks then.
	waiting      bool
	carried      *phase.State
	resumedHooks []gitsyncv1.HookStatus
	// lock is the Application's drift lock, when this reconcile holds it.
	lock *heldLock
	// prune is what the sync request this run serves asked of pruning (nil: spec.prune),
	// kept in status.syncProgress while the run waits: the request is handled by then.
	prune *bool
}

// prunes tells whether this run prunes: as its sync request asked, else spec.prune.
func (s *syncRun) prunes() bool {
	if s.prune != nil {
		return *s.prune
	}
	return s.app.Spec.Prune
}
