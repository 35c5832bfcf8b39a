package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1alpha1"
	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/tree"
)

var funcs = template.FuncMap{
	"lower": strings.ToLower,
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
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
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

// getApp reads the Application of the request's path from the cache.
func (s *Server) getApp(r *http.Request) (*gitsyncv1.Application, error) {
	app := &gitsyncv1.Application{}
	key := client.ObjectKey{Namespace: r.PathValue("namespace"), Name: r.PathValue("name")}
	if err := s.cache.Get(r.Context(), key, app); err != nil {
		if strings.Contains(err.Error(), "unknown namespace") {
			return nil, apierrors.NewNotFound(schema.GroupResource{Group: gitsyncv1.GroupVersion.Group, Resource: "applications"}, key.Name)
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
	}
	return d, nil
}

// ObjectView is one node of the tree: its live manifest, its Git manifest and the diff.
type ObjectView struct {
	ObjectDiff
	// Note explains what is missing (no Git manifest for an owned child, say).
	Note string `json:"note,omitempty"`
}

// apiObject shows the object ?id=Kind/namespace/name of the application.
func (s *Server) apiObject(w http.ResponseWriter, r *http.Request) {
	app, err := s.getApp(r)
	if err != nil {
		fail(w, err)
		return
	}
	id := r.URL.Query().Get("id")
	kind, _, _ := strings.Cut(id, "/")
	if kind == "" {
		fail(w, errBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 60*time.Second)
	defer cancel()
	view := ObjectView{ObjectDiff: ObjectDiff{Subject: id}}
	if s.inInventory(app, id) && s.opts.Diff != nil {
		diffs, err := s.opts.Diff(ctx, s.cfg, s.direct, app, func(subject string) bool { return subject == id })
		switch {
		case err != nil:
			view.Note = "Git manifest unavailable: " + err.Error()
		case len(diffs) == 0:
			view.Note = "Git no longer holds this object; the next sync prunes it if prune is on."
		default:
			view.ObjectDiff = diffs[0]
		}
	}
	if view.Live == "" && kind != "Secret" {
		live, err := s.liveYAML(ctx, app, id)
		if err != nil {
			fail(w, err)
			return
		}
		view.Live = live
		if view.Note == "" && !s.inInventory(app, id) {
			view.Note = "Owned by an object of the application; not in Git."
		}
	}
	writeJSON(w, view)
}

func (s *Server) inInventory(app *gitsyncv1.Application, id string) bool {
	if app.Status.Inventory == nil {
		return false
	}
	for _, e := range app.Status.Inventory.Entries {
		if entryID(e) == id {
			return true
		}
	}
	return false
}

// liveYAML reads an object of the app's tree from the cache as YAML (never a Secret).
func (s *Server) liveYAML(ctx context.Context, app *gitsyncv1.Application, id string) (string, error) {
	nodes, _, err := s.tree(ctx, app)
	if err != nil {
		return "", err
	}
	var gvk schema.GroupVersionKind
	var found *Node
	var walk func([]*Node)
	walk = func(ns []*Node) {
		for _, n := range ns {
			if n.ID == id && found == nil {
				found = n
			}
			walk(n.Children)
		}
	}
	walk(nodes)
	if found == nil {
		return "", apierrors.NewNotFound(schema.GroupResource{Resource: "objects"}, id)
	}
	gvk = s.gvkOf(app, found)
	if !s.canRead(ctx, gvk) {
		return "", fmt.Errorf("you may not list and watch %s: %w", gvk.Kind, errForbidden)
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	if err := s.cache.Get(ctx, client.ObjectKey{Namespace: found.Namespace, Name: found.Name}, obj); err != nil {
		return "", err
	}
	obj.SetManagedFields(nil)
	b, err := yaml.Marshal(obj.Object)
	return string(b), err
}

func (s *Server) gvkOf(app *gitsyncv1.Application, n *Node) schema.GroupVersionKind {
	for _, gvk := range tree.ChildKinds {
		if gvk.Kind == n.Kind && !n.Managed {
			return gvk
		}
	}
	for _, e := range app.Status.Inventory.Entries {
		if entryID(e) == n.ID {
			if gvk, err := apply.EntryFrom(e).GroupVersionKind(); err == nil {
				return gvk
			}
		}
	}
	return schema.GroupVersionKind{}
}
