package ui

import (
	"fmt"
	"net/http"
	"net/url"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/apply"
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

// apiAction runs sync (sets the requested-at annotation), suspend or resume as the
// identity, after a SelfSubjectAccessReview.
func (s *Server) apiAction(w http.ResponseWriter, r *http.Request) {
	if s.opts.ReadOnly {
		fail(w, fmt.Errorf("this ui is read-only: %w", errForbidden))
		return
	}
	if !s.sameOrigin(r) {
		fail(w, fmt.Errorf("cross-site request or missing csrf token: %w", errForbidden))
		return
	}
	ns, name, action := r.PathValue("namespace"), r.PathValue("name"), r.PathValue("action")
	if action != "sync" && action != "suspend" && action != "resume" {
		fail(w, fmt.Errorf("unknown action %q: %w", action, errBadRequest))
		return
	}
	ok, err := allowed(r.Context(), s.direct, appAttrs("patch", ns, name))
	if err != nil {
		fail(w, err)
		return
	}
	if !ok {
		fail(w, fmt.Errorf("you may not patch Application %s/%s: %w", ns, name, errForbidden))
		return
	}
	app := &gitsyncv1.Application{}
	if err := s.direct.Get(r.Context(), client.ObjectKey{Namespace: ns, Name: name}, app); err != nil {
		fail(w, err)
		return
	}
	base := client.MergeFrom(app.DeepCopy())
	switch action {
	case "sync":
		a := app.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a[gitsyncv1.RequestedAtAnnotation] = time.Now().UTC().Format(time.RFC3339Nano)
		app.SetAnnotations(a)
	case "suspend":
		app.Spec.Suspend = true
	case "resume":
		// As `gitsync resume`: follow the source again.
		app.Spec.Suspend, app.Spec.PinnedRevision = false, ""
	}
	if err := s.direct.Patch(r.Context(), app, base); err != nil {
		fail(w, fmt.Errorf("%s of %s/%s: %w", action, ns, name, err))
		return
	}
	writeJSON(w, map[string]string{"result": action + " requested"})
}
