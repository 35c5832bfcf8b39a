package ui

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1alpha1"
)

//go:embed assets
var assets embed.FS

// ObjectDiff is one object of an Application as Git renders it and as it is live, both
// as YAML with Secret values masked, and the fields that differ.
type ObjectDiff struct {
	// Subject is "Kind/namespace/name" ("Kind/name" when cluster-scoped).
	Subject string `json:"subject"`
	// Action is what a sync would do: created, configured or unchanged.
	Action string `json:"action"`
	Live   string `json:"live,omitempty"`
	Git    string `json:"git,omitempty"`
	// Fields are the differing field paths (drift.Field paths).
	Fields []string `json:"fields,omitempty"`
	// Diff is a unified diff from live to Git.
	Diff string `json:"diff,omitempty"`
}

// Differ compares the objects of app that want accepts with the cluster, as a sync
// would apply them (drift.CompareObject): `gitsync ui` renders them from the source
// (cli.UIDiff), the operator's UI takes what it last applied (DesiredDiffer).
type Differ func(ctx context.Context, cfg *rest.Config, c client.Client, app *gitsyncv1.Application, want func(subject string) bool) ([]ObjectDiff, error)

// Options configure a Server.
type Options struct {
	// ReadOnly hides and refuses the actions (sync, suspend, resume): the operator's mode.
	ReadOnly bool
	// Diff shows Git manifests and diffs; nil leaves them out.
	Diff Differ
	// Namespaces limits the UI to these namespaces; nil: every namespace the identity may
	// list Applications in (all of them when it may list them cluster-wide).
	Namespaces []string
}

// Server is the UI's http.Handler. Every browser reads the same informer cache.
type Server struct {
	opts   Options
	scheme *runtime.Scheme
	cache  cache.Cache
	// direct talks to the API server with the identity's credentials (actions, access
	// reviews, diffs).
	direct     client.Client
	cfg        *rest.Config
	namespaces []string
	broker     *broker
	// synced is closed once Start has filled the cache.
	synced chan struct{}
	csrf   string
	pages  *template.Template
	mux    *http.ServeMux

	mu sync.Mutex
	// watched kinds have an informer; readable ones are those the identity may list and
	// watch (the others would never sync, so they are not read).
	watched, readable map[schema.GroupVersionKind]bool
}

// New prepares a Server for cfg's identity; Start runs its cache.
func New(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, opts Options) (*Server, error) {
	direct, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("connecting to the cluster: %w", err)
	}
	namespaces := opts.Namespaces
	if namespaces == nil {
		if namespaces, err = visibleNamespaces(ctx, direct); err != nil {
			return nil, err
		}
	}
	copts := cache.Options{Scheme: scheme, DefaultTransform: cache.TransformStripManagedFields()}
	if namespaces != nil {
		copts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			copts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	c, err := cache.New(cfg, copts)
	if err != nil {
		return nil, fmt.Errorf("creating the cache: %w", err)
	}
	token := make([]byte, 32)
	if _, err := rand.Read(token); err != nil {
		return nil, fmt.Errorf("creating the csrf token: %w", err)
	}
	pages, err := template.New("").Funcs(funcs).ParseFS(assets, "assets/*.html")
	if err != nil {
		return nil, fmt.Errorf("parsing templates: %w", err)
	}
	s := &Server{opts: opts, scheme: scheme, cache: c, direct: direct, cfg: cfg, namespaces: namespaces,
		broker: newBroker(), synced: make(chan struct{}), csrf: hex.EncodeToString(token), pages: pages, watched: map[schema.GroupVersionKind]bool{},
		readable: map[schema.GroupVersionKind]bool{}}
	s.routes()
	return s, nil
}

// Start runs the cache until ctx ends; the handler answers once the cache has synced.
func (s *Server) Start(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- s.cache.Start(ctx) }()
	for _, obj := range []client.Object{&gitsyncv1.Application{}, &gitsyncv1.GitRepository{}, &corev1.Event{}} {
		if err := s.notifyOn(ctx, obj); err != nil {
			return err
		}
	}
	if !s.cache.WaitForCacheSync(ctx) {
		return fmt.Errorf("waiting for the ui cache: %w", ctx.Err())
	}
	close(s.synced)
	return <-errc
}

// WaitForCacheSync blocks until Start has filled the cache (false when ctx ends first).
func (s *Server) WaitForCacheSync(ctx context.Context) bool {
	select {
	case <-s.synced:
		return true
	case <-ctx.Done():
		return false
	}
}

// NeedLeaderElection lets every operator replica serve the UI.
func (s *Server) NeedLeaderElection() bool { return false }

// notifyOn makes every change of obj's kind an event for the browsers.
func (s *Server) notifyOn(ctx context.Context, obj client.Object) error {
	inf, err := s.cache.GetInformer(ctx, obj)
	if err != nil {
		return fmt.Errorf("watching %T: %w", obj, err)
	}
	publish := func(o any) {
		if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		m, ok := o.(client.Object)
		if !ok {
			return
		}
		kind := m.GetObjectKind().GroupVersionKind().Kind
		if u, ok := o.(*unstructured.Unstructured); ok {
			kind = u.GetKind()
		}
		if kind == "" {
			if gvks, _, err := s.scheme.ObjectKinds(m); err == nil && len(gvks) > 0 {
				kind = gvks[0].Kind
			}
		}
		ev := change{Kind: kind, Namespace: m.GetNamespace(), Name: m.GetName()}
		if e, ok := o.(*corev1.Event); ok {
			ev.Kind, ev.Namespace, ev.Name = "Event", e.InvolvedObject.Namespace, e.InvolvedObject.Name
		}
		for _, ref := range m.GetOwnerReferences() {
			ev.Owner = ref.Kind + "/" + ref.Name
		}
		s.broker.publish(ev)
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    publish,
		UpdateFunc: func(_, n any) { publish(n) },
		DeleteFunc: publish,
	})
	return err
}

// watch starts (once) an informer for gvk whose changes reach the browsers.
func (s *Server) watch(ctx context.Context, gvk schema.GroupVersionKind) {
	s.mu.Lock()
	if s.watched[gvk] {
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	may := s.mayWatch(ctx, gvk)
	s.mu.Lock()
	s.watched[gvk], s.readable[gvk] = true, may
	s.mu.Unlock()
	if !may {
		return
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	var obj client.Object = u
	if gvk.Group == "" && gvk.Kind == "Secret" {
		// Never hold Secret data: only their metadata.
		obj = metadataOf(gvk)
	}
	if err := s.notifyOn(ctx, obj); err != nil {
		s.mu.Lock()
		delete(s.watched, gvk)
		s.mu.Unlock()
	}
}

// canRead says whether objects of gvk can be read from the cache: watch(gvk) found the
// identity may list and watch them where the cache looks.
func (s *Server) canRead(ctx context.Context, gvk schema.GroupVersionKind) bool {
	s.watch(ctx, gvk)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readable[gvk]
}

// mayWatch asks the API server whether the identity may list and watch gvk in every
// namespace the cache covers.
func (s *Server) mayWatch(ctx context.Context, gvk schema.GroupVersionKind) bool {
	mapping, err := s.direct.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return false
	}
	namespaces := s.namespaces
	if namespaces == nil || mapping.Scope.Name() == "root" {
		namespaces = []string{""}
	}
	for _, ns := range namespaces {
		for _, verb := range []string{"list", "watch"} {
			ok, err := allowed(ctx, s.direct, authorizationv1.ResourceAttributes{Verb: verb, Group: gvk.Group,
				Resource: mapping.Resource.Resource, Namespace: ns})
			if err != nil || !ok {
				return false
			}
		}
	}
	return true
}

func (s *Server) routes() {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /{$}", s.pageApps)
	mux.HandleFunc("GET /apps/{namespace}/{name}", s.pageApp)
	mux.HandleFunc("GET /sources", s.pageSources)
	mux.HandleFunc("GET /api/apps", s.apiApps)
	mux.HandleFunc("GET /api/apps/{namespace}/{name}", s.apiApp)
	mux.HandleFunc("GET /api/apps/{namespace}/{name}/object", s.apiObject)
	mux.HandleFunc("GET /api/sources", s.apiSources)
	mux.HandleFunc("GET /api/events", s.apiEvents)
	mux.HandleFunc("POST /api/apps/{namespace}/{name}/{action}", s.apiAction)
	s.mux = mux
}

// ServeHTTP serves the pages, assets and JSON endpoints.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; frame-ancestors 'none'")
	s.mux.ServeHTTP(w, r)
}

// Serve serves h on ln until ctx ends.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		return fmt.Errorf("serving the ui on %s: %w", ln.Addr(), err)
	}
	return nil
}

// Run starts the cache, waits until it has synced, then serves the UI on addr until ctx
// ends; ready (when not nil) gets the URL once the UI answers.
func (s *Server) Run(ctx context.Context, addr string, ready func(url string)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 2)
	go func() { errc <- s.Start(ctx) }()
	if !s.WaitForCacheSync(ctx) {
		ln.Close()
		cancel()
		return fmt.Errorf("reading the cluster for the ui: %w", <-errc)
	}
	if ready != nil {
		ready("http://" + ln.Addr().String() + "/")
	}
	go func() { errc <- Serve(ctx, ln, s) }()
	select {
	case <-ctx.Done():
		return nil
	case err := <-errc:
		return err
	}
}
