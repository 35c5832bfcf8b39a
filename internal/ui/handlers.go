package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"html/template"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

var funcs = template.FuncMap{
	"lower":    strings.ToLower,
	"when":     when,
	"whenText": whenText,
	"json": func(v any) (template.JS, error) {
		b, err := json.Marshal(v)
		return template.JS(b), err
	},
}

// page is what every template gets.
type page struct {
	Title    string
	View     string
	CSRF     string
	ReadOnly bool
	Apps     []AppRow
	Sources  []SourceRow
	App      *AppDetail
	// KubeLogin (a Kubernetes token, AuthKubernetes) and Message (why the last attempt
	// failed) fill the login page.
	KubeLogin bool
	Message   string
}

func (s *Server) render(w http.ResponseWriter, code int, name string, p page) {
	p.CSRF, p.ReadOnly = s.csrf, s.opts.ReadOnly
	var buf bytes.Buffer
	if err := s.pages.ExecuteTemplate(&buf, name, p); err != nil {
		http.Error(w, "rendering the page failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = buf.WriteTo(w)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v)
}

// fail answers with the status an error deserves and a JSON message.
func fail(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch {
	case apierrors.IsNotFound(err):
		code = http.StatusNotFound
	case apierrors.IsForbidden(err), errors.Is(err, errForbidden):
		code = http.StatusForbidden
	case errors.Is(err, errBadRequest):
		code = http.StatusBadRequest
	case errors.Is(err, context.DeadlineExceeded):
		code = http.StatusGatewayTimeout
	}
	failWith(w, code, err.Error())
}

func failWith(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

var (
	errForbidden  = errors.New("forbidden")
	errBadRequest = errors.New("bad request")
)

func (s *Server) pageApps(w http.ResponseWriter, r *http.Request) {
	rows, err := s.listApps(r.Context())
	if err != nil {
		fail(w, err)
		return
	}
	s.render(w, http.StatusOK, "apps.html", page{Title: "Applications", View: "apps", Apps: rows})
}

func (s *Server) pageSources(w http.ResponseWriter, r *http.Request) {
	rows, err := s.listSources(r.Context())
	if err != nil {
		fail(w, err)
		return
	}
	s.render(w, http.StatusOK, "sources.html", page{Title: "Sources", View: "sources", Sources: rows})
}

func (s *Server) pageApp(w http.ResponseWriter, r *http.Request) {
	d, err := s.detail(r)
	if err != nil {
		if apierrors.IsNotFound(err) {
			s.render(w, http.StatusNotFound, "notfound.html", page{Title: "Not found"})
			return
		}
		fail(w, err)
		return
	}
	s.render(w, http.StatusOK, "app.html", page{Title: d.Namespace + "/" + d.Name, View: "app", App: d})
}

func (s *Server) apiApps(w http.ResponseWriter, r *http.Request) {
	rows, err := s.listApps(r.Context())
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, map[string]any{"items": rows})
}

func (s *Server) apiSources(w http.ResponseWriter, r *http.Request) {
	rows, err := s.listSources(r.Context())
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, map[string]any{"items": rows})
}

func (s *Server) apiApp(w http.ResponseWriter, r *http.Request) {
	d, err := s.detail(r)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, d)
}

// getApp reads the Application of the request's path from the cache, when the caller
// may get it: else it is not found, whether it exists or not.
func (s *Server) getApp(r *http.Request) (*gitsyncv1.Application, error) {
	app := &gitsyncv1.Application{}
	key := client.ObjectKey{Namespace: r.PathValue("namespace"), Name: r.PathValue("name")}
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: gitsyncv1.GroupVersion.Group, Resource: "applications"}, key.Name)
	if !s.mayGet(r.Context(), callerOf(r.Context()), gitsyncv1.GroupVersion.WithKind(gitsyncv1.ApplicationKind), key.Namespace, key.Name) {
		return nil, notFound
	}
	if err := s.cache.Get(r.Context(), key, app); err != nil {
		if strings.Contains(err.Error(), "unknown namespace") {
			return nil, notFound
		}
		return nil, err
	}
	return app, nil
}

func (s *Server) detail(r *http.Request) (*AppDetail, error) {
	app, err := s.getApp(r)
	if err != nil {
		return nil, err
	}
	d, err := s.appDetail(r.Context(), app)
	if err != nil {
		return nil, err
	}
	if !s.opts.ReadOnly {
		d.CanSync, _ = allowed(r.Context(), s.direct, appAttrs("patch", app.Namespace, app.Name))
		d.CanSuspend = d.CanSync
		d.CanRollback = d.CanSync && app.Spec.SourceRef.Kind != gitsyncv1.HelmRepositoryKind &&
			app.Spec.SourceRef.Kind != gitsyncv1.OCIRepositoryKind && !app.MultiSource()
	}
	return d, nil
}
