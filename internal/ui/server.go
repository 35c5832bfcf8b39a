package ui

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/operations"
)

//go:embed assets
var assets embed.FS

// ObjectDiff is one object of an Application as Git renders it and as it is live
// (operations.ObjectDiff).
type ObjectDiff = operations.ObjectDiff

// Differ compares the objects of app that want accepts with the cluster, as a sync
// would apply them (drift.CompareObject): `gitsync ui` renders them from the source
// (operations.ObjectDiffsFromSource), the operator's UI takes what it last applied
// (DesiredDiffer).
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
	// Auth is how requests are authenticated, and whose rights they get: the zero value
	// is `gitsync ui`'s launch token; the operator sets AuthKubernetes (which implies
	// ReadOnly).
	Auth Auth
	// MaxStreams caps the open event streams (default 100), MaxStreamsPerCaller those of
	// one caller (default 10); beyond them /api/events answers 503.
	MaxStreams, MaxStreamsPerCaller int
}

// maxKinds bounds the informers that Server starts on demand for the kinds of the trees
// it shows (beyond Applications, GitRepositories and Events): each holds every object of
// its kind where the cache looks. A kind past the bound is shown as unreadable (health
// Unknown, no live manifest).
const maxKinds = 64

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
	// patterns are the mux's routes (the tests walk them).
	patterns []string
	// token is the launch token (AuthLaunchToken); reviews checks tokens and access
	// (AuthKubernetes); streams caps /api/events.
	token   string
	reviews *reviews
	streams *streams
	// listen is the host Run listens on, for the Host check.
	listen string

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
	csrf, err := randomToken()
	if err != nil {
		return nil, fmt.Errorf("creating the csrf token: %w", err)
	}
	var launch string
	if opts.Auth == AuthLaunchToken {
		if launch, err = randomToken(); err != nil {
			return nil, fmt.Errorf("creating the launch token: %w", err)
		}
	} else {
		opts.ReadOnly = true
	}
	if opts.MaxStreams <= 0 {
		opts.MaxStreams = 100
	}
	if opts.MaxStreamsPerCaller <= 0 {
		opts.MaxStreamsPerCaller = 10
	}
	pages, err := template.New("").Funcs(funcs).ParseFS(assets, "assets/*.html")
	if err != nil {
		return nil, fmt.Errorf("parsing templates: %w", err)
	}
	s := &Server{opts: opts, scheme: scheme, cache: c, direct: direct, cfg: cfg, namespaces: namespaces,
		broker: newBroker(), synced: make(chan struct{}), csrf: csrf, pages: pages, watched: map[schema.GroupVersionKind]bool{},
		readable: map[schema.GroupVersionKind]bool{}, token: launch, reviews: newReviews(direct),
		streams: newStreams(opts.MaxStreams, opts.MaxStreamsPerCaller)}
	s.routes()
	return s, nil
}

func randomToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// Start runs the cache until ctx ends; the handler answers once the cache has synced.
func (s *Server) Start(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- s.cache.Start(ctx) }()
	for _, obj := range []client.Object{&gitsyncv1.Application{}, &gitsyncv1.GitRepository{}, &corev1.Event{}} {
		if err := s.notifyOn(ctx, obj); err != nil {
			return err
		}
		// Watched for good: a tree that holds one does not add a second informer handler.
		gvk, _ := apiutil.GVKForObject(obj, s.scheme)
		s.mu.Lock()
		s.watched[gvk], s.readable[gvk] = true, true
		s.mu.Unlock()
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
	gvk, err := apiutil.GVKForObject(obj, s.scheme)
	if err != nil {
		return err
	}
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
		ev := change{Kind: kind, Namespace: m.GetNamespace(), Name: m.GetName(), gvk: gvk, namespace: m.GetNamespace()}
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

// watch starts (once) an informer for gvk whose changes reach the browsers, unless
// maxKinds are watched already. Callers ask only for kinds the request's caller may read
// (callerReader), so a caller never makes the Server watch a kind it may not see.
func (s *Server) watch(ctx context.Context, gvk schema.GroupVersionKind) {
	s.mu.Lock()
	if s.watched[gvk] || len(s.watched) >= maxKinds {
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
	handle := func(pattern string, h http.Handler) {
		mux.Handle(pattern, h)
		s.patterns = append(s.patterns, pattern)
	}
	static, _ := fs.Sub(assets, "assets")
	handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	handle("GET /{$}", http.HandlerFunc(s.pageApps))
	handle("GET /apps/{namespace}/{name}", http.HandlerFunc(s.pageApp))
	handle("GET /sources", http.HandlerFunc(s.pageSources))
	handle("GET /api/apps", http.HandlerFunc(s.apiApps))
	handle("GET /api/apps/{namespace}/{name}", http.HandlerFunc(s.apiApp))
	handle("GET /api/apps/{namespace}/{name}/object", http.HandlerFunc(s.apiObject))
	handle("GET /api/apps/{namespace}/{name}/preview", http.HandlerFunc(s.apiPreview))
	handle("GET /api/sources", http.HandlerFunc(s.apiSources))
	handle("GET /api/events", http.HandlerFunc(s.apiEvents))
	handle("POST /api/apps/{namespace}/{name}/{action}", http.HandlerFunc(s.apiAction))
	s.mux = mux
}

// ServeHTTP serves the pages, assets and JSON endpoints to authenticated callers (guard).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; frame-ancestors 'none'")
	w.Header().Set("Referrer-Policy", "same-origin")
	r, ok := s.guard(w, r)
	if !ok {
		return
	}
	s.mux.ServeHTTP(w, r)
}

func (s *Server) listenHost() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listen
}
