package ui

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/operations"
	"github.com/gitsync-dev/gitsync/internal/rollback"
)

func entryID(e gitsyncv1.InventoryEntry) string { return apply.EntryFrom(e).Subject() }

// sameOrigin checks that a state-changing request comes from the UI's own pages: the
// Origin (or Referer) names this host, and the X-CSRF-Token header holds the token the
// pages carry.
func (s *Server) sameOrigin(r *http.Request) bool {
	if r.Header.Get("X-CSRF-Token") != s.csrf {
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		origin = r.Header.Get("Referer")
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host != r.Host {
		return false
	}
	return r.Header.Get("Sec-Fetch-Site") == "" || r.Header.Get("Sec-Fetch-Site") == "same-origin"
}

// actionRequest is the body of an action: Hooks (sync) runs the hooks again, Revision
// (rollback) is the revision of the history to pin.
type actionRequest struct {
	Hooks bool `json:"hooks"`
	// Prune, when it differs from spec.prune, prunes (or not) in this sync only.
	Prune    *bool  `json:"prune"`
	Revision string `json:"revision"`
	// Resources makes the sync a selective one (`gitsync sync app NAME --resource …`):
	// only these objects of the render ([GROUP/]KIND[/NAMESPACE]/NAME) are applied, after
	// a dry-run of the whole revision; no hooks, no prune.
	Resources []string `json:"resources"`
}

// mayAct checks that the request may change the Application: not read-only, from the
// UI's own pages, and allowed to patch it (a SelfSubjectAccessReview).
func (s *Server) mayAct(r *http.Request, ns, name string) error {
	if s.opts.ReadOnly {
		return fmt.Errorf("this ui is read-only: %w", errForbidden)
	}
	if !s.sameOrigin(r) {
		return fmt.Errorf("cross-site request or missing csrf token: %w", errForbidden)
	}
	ok, err := allowed(r.Context(), s.direct, appAttrs("patch", ns, name))
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("you may not patch Application %s/%s: %w", ns, name, errForbidden)
	}
	return nil
}

// apiAction runs sync (a sync request with its hooks and prune options, or a selective
// one of the objects it names: selective.go), rollback (pins
// a revision of the history, as `gitsync rollback --to`), suspend or resume
// (internal/operations) as the identity, after a SelfSubjectAccessReview. Sync and
// rollback of a suspended Application are refused, as the CLI refuses them: a request
// left behind would fire on resume.
func (s *Server) apiAction(w http.ResponseWriter, r *http.Request) {
	ns, name, action := r.PathValue("namespace"), r.PathValue("name"), r.PathValue("action")
	if err := s.mayAct(r, ns, name); err != nil {
		fail(w, err)
		return
	}
	if action != "sync" && action != "suspend" && action != "resume" && action != "rollback" {
		fail(w, fmt.Errorf("unknown action %q: %w", action, errBadRequest))
		return
	}
	var req actionRequest
	if r.ContentLength != 0 {
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req); err != nil {
			fail(w, fmt.Errorf("reading the request: %v: %w", err, errBadRequest))
			return
		}
	}
	selectors, err := s.selectiveRequest(action, req)
	if err != nil {
		fail(w, err)
		return
	}
	app := &gitsyncv1.Application{}
	if err := s.direct.Get(r.Context(), client.ObjectKey{Namespace: ns, Name: name}, app); err != nil {
		fail(w, err)
		return
	}
	if app.Spec.Suspend && (action == "sync" || action == "rollback") {
		failWith(w, http.StatusConflict, fmt.Sprintf("Application %s/%s is suspended: resume it first (a %s now would do nothing until then)", ns, name, action))
		return
	}
	key := client.ObjectKeyFromObject(app)
	result := action + " requested"
	switch {
	case action == "sync" && len(selectors) > 0:
		if err := s.checkRendered(r.Context(), app, selectors); err != nil {
			fail(w, err)
			return
		}
		result = selectiveResult(req.Resources)
		_, _, err = operations.Request(r.Context(), s.direct, operations.App, key, operations.SyncOptions{Resources: req.Resources})
	case action == "sync":
		var with []string
		if req.Hooks {
			with = append(with, "hooks included")
		}
		var prune *bool
		if req.Prune != nil && *req.Prune != app.Spec.Prune {
			prune = req.Prune
			with = append(with, map[bool]string{true: "pruning this once", false: "without pruning this once"}[*req.Prune])
		}
		if len(with) > 0 {
			result += ", " + strings.Join(with, ", ")
		}
		_, _, err = operations.Request(r.Context(), s.direct, operations.App, key, operations.SyncOptions{Hooks: req.Hooks, Prune: prune})
	case action == "rollback":
		var rev string
		if _, rev, err = operations.Pin(r.Context(), s.direct, key, req.Revision); errors.Is(err, rollback.ErrRefused) {
			fail(w, fmt.Errorf("%w: %w", err, errBadRequest))
			return
		}
		result = "pinned to " + rev + "; newer commits wait until it is resumed"
	default: // suspend, resume
		// Resume, as `gitsync resume`, also follows the source again.
		_, err = operations.SetSuspend(r.Context(), s.direct, operations.App, key, action == "suspend")
	}
	if err != nil {
		fail(w, fmt.Errorf("%s of %s/%s: %w", action, ns, name, err))
		return
	}
	writeJSON(w, map[string]string{"result": result})
}

// selectiveRequest reads the objects a selective sync names (none: not selective),
// refusing them on another action and with the options a selective sync never runs.
func (s *Server) selectiveRequest(action string, req actionRequest) ([]gitsyncv1.ResourceSelector, error) {
	if req.Resources == nil {
		return nil, nil
	}
	if action != "sync" || len(req.Resources) == 0 {
		return nil, fmt.Errorf("resources name the objects of a sync (at least one): %w", errBadRequest)
	}
	if req.Hooks || (req.Prune != nil && *req.Prune) {
		return nil, fmt.Errorf("a selective sync runs no hooks and prunes nothing: untick those options: %w", errBadRequest)
	}
	return parseResources(req.Resources)
}
