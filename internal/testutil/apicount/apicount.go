// Package apicount counts the requests a client makes to the Kubernetes API, by verb, so
// benchmarks can report what gitsync costs the API server.
package apicount

import (
	"fmt"
	"maps"
	"net/http"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Counter counts requests by verb: get, list, watch, create, update, patch, delete, and
// dry-run-patch / dry-run-create for requests with dryRun=All; and the same by namespace
// for requests to namespaced objects.
type Counter struct {
	mu          sync.Mutex
	counts      map[string]int
	byNamespace map[string]map[string]int
	// detail counts by verb and resource ("get configmaps").
	detail map[string]int
}

// New returns an empty Counter.
func New() *Counter {
	return &Counter{counts: map[string]int{}, byNamespace: map[string]map[string]int{}, detail: map[string]int{}}
}

// NewClient returns a Counter and a client of a copy of base whose requests it counts.
func NewClient(base *rest.Config, scheme *runtime.Scheme) (*Counter, client.Client, error) {
	c := New()
	cfg := rest.CopyConfig(base)
	c.Wrap(cfg)
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	return c, cl, err
}

// Wrap makes cfg's clients count through c. Call it before building clients from cfg.
func (c *Counter) Wrap(cfg *rest.Config) {
	prev := cfg.WrapTransport
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if prev != nil {
			rt = prev(rt)
		}
		return roundTripper{c: c, next: rt}
	}
}

type roundTripper struct {
	c    *Counter
	next http.RoundTripper
}

func (r roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	r.c.add(Verb(req), Resource(req.URL.Path), Namespace(req.URL.Path))
	return r.next.RoundTrip(req)
}

// Add counts a request told by another source (an API server's audit log): verb as
// Verb names it, path the request's URL path.
func (c *Counter) Add(verb, path string) {
	c.add(verb, Resource(path), Namespace(path))
}

func (c *Counter) add(verb, resource, namespace string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[verb]++
	c.detail[verb+" "+resource]++
	if namespace == "" {
		return
	}
	if c.byNamespace[namespace] == nil {
		c.byNamespace[namespace] = map[string]int{}
	}
	c.byNamespace[namespace][verb]++
}

// Namespace is the namespace of a request for namespaced objects
// (/api/v1/namespaces/NS/configmaps...), "" for others (the Namespace object itself too).
func Namespace(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i := 0; i+2 < len(parts); i++ {
		if parts[i] == "namespaces" && (i == 2 && parts[0] == "api" || i == 3 && parts[0] == "apis") {
			return parts[i+1]
		}
	}
	return ""
}

// InNamespace returns the counts of the requests for objects in namespace ns.
func (c *Counter) InNamespace(ns string) map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.byNamespace[ns]))
	for k, v := range c.byNamespace[ns] {
		out[k] = v
	}
	return out
}

// Resource names the resource of an API path ("configmaps", "applications/status"), or
// "discovery" for the paths that list groups and resources.
func Resource(path string) string {
	parts, ok := afterGroupVersion(path)
	if !ok {
		return "discovery"
	}
	if len(parts) >= 2 && parts[0] == "namespaces" {
		if len(parts) == 2 {
			return "namespaces"
		}
		parts = parts[2:]
	}
	switch len(parts) {
	case 0:
		return "discovery"
	case 3:
		return parts[0] + "/" + parts[2]
	default:
		return parts[0]
	}
}

// Verb names a request the way the API server's audit log would, with dry-runs apart.
func Verb(req *http.Request) string {
	q := req.URL.Query()
	var verb string
	switch req.Method {
	case http.MethodGet:
		switch {
		case q.Get("watch") == "true" || q.Get("watch") == "1":
			verb = "watch"
		case isCollection(req.URL.Path):
			verb = "list"
		default:
			verb = "get"
		}
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
	default:
		verb = strings.ToLower(req.Method)
	}
	if q.Get("dryRun") != "" {
		verb = "dry-run-" + verb
	}
	return verb
}

// isCollection tells /api/v1/namespaces/x/configmaps (a list) from
// /api/v1/namespaces/x/configmaps/y (a get), and discovery paths from both.
func isCollection(path string) bool {
	parts, ok := afterGroupVersion(path)
	if !ok {
		return false
	}
	if len(parts) >= 2 && parts[0] == "namespaces" {
		if len(parts) == 2 {
			return false // a Namespace itself
		}
		parts = parts[2:]
	}
	return len(parts) == 1
}

// Snapshot returns a copy of the counts.
func (c *Counter) Snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.counts))
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}

// DetailSnapshot returns a copy of the counts by verb and resource ("get configmaps").
func (c *Counter) DetailSnapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.detail)
}

// DetailSince returns the counts by verb and resource added after the DetailSnapshot before.
func (c *Counter) DetailSince(before map[string]int) map[string]int {
	return since(c.DetailSnapshot(), before)
}

// Since returns the counts added after the snapshot before.
func (c *Counter) Since(before map[string]int) map[string]int {
	return since(c.Snapshot(), before)
}

func since(now, before map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range now {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// Writes sums the verbs that change something (dry-runs excluded).
func Writes(counts map[string]int) int {
	return counts["create"] + counts["update"] + counts["patch"] + counts["delete"]
}

// Total sums every verb.
func Total(counts map[string]int) int {
	n := 0
	for _, v := range counts {
		n += v
	}
	return n
}

// Format prints counts as "get=3 patch=1", sorted by verb.
func Format(counts map[string]int) string {
	verbs := make([]string, 0, len(counts))
	for v := range counts {
		verbs = append(verbs, v)
	}
	sort.Strings(verbs)
	parts := make([]string, 0, len(verbs))
	for _, v := range verbs {
		parts = append(parts, fmt.Sprintf("%s=%d", v, counts[v]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// Reconciles is how many reconciles the controllers named controller ran in this process
// so far (controller-runtime's reconcile_total, all results), for tests and benchmarks
// that wait until a manager has looked at everything.
func Reconciles(controller string) float64 {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return -1
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

// afterGroupVersion splits an API path after /api/v1 or /apis/<group>/<version>; false
// for other paths.
func afterGroupVersion(path string) ([]string, bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		return parts[2:], true
	case len(parts) >= 3 && parts[0] == "apis":
		return parts[3:], true
	}
	return nil, false
}
