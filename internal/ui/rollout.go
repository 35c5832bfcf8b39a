package ui

import (
	"context"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// RolloutView is the RollingSync rollout (status.rollout) of the ApplicationSet an
// Application belongs to: its steps with their Applications' states, and what halted it.
type RolloutView struct {
	// Set is the ApplicationSet's name (in the Application's namespace).
	Set         string `json:"set"`
	Revision    string `json:"revision,omitempty"`
	CurrentStep int32  `json:"currentStep"`
	// Halted names the Application (and why) that halted the rollout; HaltedMessage is the
	// set's Ready condition when its reason is RolloutHalted.
	Halted        string                  `json:"halted,omitempty"`
	HaltedMessage string                  `json:"haltedMessage,omitempty"`
	Steps         []gitsyncv1.RolloutStep `json:"steps,omitempty"`
}

// setOf is the ApplicationSet that generated app (label gitsync.dev/applicationset).
func setOf(app *gitsyncv1.Application) string {
	return app.GetLabels()[gitsyncv1.ApplicationSetLabel]
}

// rolloutOf reads the rollout of app's ApplicationSet as the caller may: nil for an
// Application of no set, a set without a rollout, or one the caller may not get.
func (s *Server) rolloutOf(ctx context.Context, app *gitsyncv1.Application) *RolloutView {
	name := setOf(app)
	if name == "" {
		return nil
	}
	set := &gitsyncv1.ApplicationSet{}
	if err := (callerReader{s: s, who: callerOf(ctx)}).Get(ctx, client.ObjectKey{Namespace: app.Namespace, Name: name}, set); err != nil {
		return nil
	}
	r := set.Status.Rollout
	if r == nil {
		return nil
	}
	v := &RolloutView{Set: name, Revision: r.Revision, CurrentStep: r.CurrentStep, Halted: r.Halted, Steps: r.Steps}
	if c := apimeta.FindStatusCondition(set.Status.Conditions, gitsyncv1.ReadyCondition); c != nil && c.Reason == gitsyncv1.RolloutHaltedReason {
		v.HaltedMessage = c.Message
	}
	return v
}
