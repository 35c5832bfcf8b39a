package ui

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/drift"
)

// Preview is a sync's dry run: the objects a sync would change, with their diffs (the
// compare of `gitsync diff`), those it would prune, and how many it would leave unchanged.
type Preview struct {
	Changes   []ObjectDiff `json:"changes"`
	Unchanged int          `json:"unchanged"`
}

// apiPreview answers what a sync of the Application would do now: the Differ over every
// object of its render, Secret values masked. It is a part of syncing, so it needs what
// a sync needs (not read-only, may patch the Application).
func (s *Server) apiPreview(w http.ResponseWriter, r *http.Request) {
	app, err := s.getApp(r)
	if err != nil {
		fail(w, err)
		return
	}
	if s.opts.ReadOnly {
		fail(w, fmt.Errorf("this ui is read-only: %w", errForbidden))
		return
	}
	if ok, err := allowed(r.Context(), s.direct, appAttrs("patch", app.Namespace, app.Name)); err != nil || !ok {
		fail(w, fmt.Errorf("you may not sync Application %s/%s: %w", app.Namespace, app.Name, errForbidden))
		return
	}
	if app.Spec.Suspend {
		failWith(w, http.StatusConflict, fmt.Sprintf("Application %s/%s is suspended: resume it first", app.Namespace, app.Name))
		return
	}
	if s.opts.Diff == nil {
		failWith(w, http.StatusNotImplemented, "this ui has no Git manifests to compare with")
		return
	}
	// ?prune=true|false previews the sync option: what it would prune, or not.
	if v := r.URL.Query().Get("prune"); v != "" {
		prune, err := strconv.ParseBool(v)
		if err != nil {
			fail(w, fmt.Errorf("prune=%q: %w", v, errBadRequest))
			return
		}
		app = app.DeepCopy()
		app.Spec.Prune = prune
		delete(app.Annotations, gitsyncv1.SyncPruneAnnotation)
	}
	ctx, cancel := context.WithTimeout(r.Context(), 60*time.Second)
	defer cancel()
	diffs, err := s.opts.Diff(ctx, s.cfg, s.direct, app, func(string) bool { return true })
	if err != nil {
		fail(w, fmt.Errorf("previewing a sync of %s/%s: %w", app.Namespace, app.Name, err))
		return
	}
	p := Preview{Changes: []ObjectDiff{}}
	for _, d := range diffs {
		if d.Action == drift.Unchanged {
			p.Unchanged++
			continue
		}
		d.Live, d.Git = "", ""
		p.Changes = append(p.Changes, d)
	}
	writeJSON(w, p)
}
