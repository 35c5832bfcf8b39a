// Package imagereg is an in-process container registry for image automation tests:
// go-containerregistry's registry with paginated tag lists (Link headers) and random images.
package imagereg

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Registry serves over plain HTTP on the loopback, with basic auth when Username is set.
type Registry struct {
	// Host is host:port.
	Host               string
	Username, Password string
	// TagPages counts the tag list pages served.
	TagPages atomic.Int64

	img v1.Image
}

// New starts a registry; it stops with the test.
func New(t testing.TB, username, password string) *Registry {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	r := &Registry{Username: username, Password: password, img: img}
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.Username != "" {
			if u, p, ok := req.BasicAuth(); !ok || u != r.Username || p != r.Password {
				w.Header().Set("WWW-Authenticate", `Basic realm="registry"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		if strings.HasSuffix(req.URL.Path, "/tags/list") && req.Method == http.MethodGet {
			r.TagPages.Add(1)
			paginate(w, req, inner)
			return
		}
		inner.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.Host = strings.TrimPrefix(srv.URL, "http://")
	return r
}

// paginate serves a tag list page and, when the page is full, the Link header of the next
// one, as the distribution spec says (go-containerregistry's registry honours n and last
// but sends no Link).
func paginate(w http.ResponseWriter, req *http.Request, inner http.Handler) {
	rec := httptest.NewRecorder()
	inner.ServeHTTP(rec, req)
	body := rec.Body.Bytes()
	n, _ := strconv.Atoi(req.URL.Query().Get("n"))
	var page struct {
		Name string   `json:"name"`
		Tags []string `json:"tags"`
	}
	if rec.Code == http.StatusOK && json.Unmarshal(body, &page) == nil {
		// The registry answers the first page again when last is its last tag.
		if last := req.URL.Query().Get("last"); last != "" {
			kept := page.Tags[:0]
			for _, tag := range page.Tags {
				if tag > last {
					kept = append(kept, tag)
				}
			}
			page.Tags = kept
			body, _ = json.Marshal(page)
			rec.Header().Del("Content-Length")
		}
		if n > 0 && len(page.Tags) == n {
			q := url.Values{"n": {strconv.Itoa(n)}, "last": {page.Tags[n-1]}}
			w.Header().Set("Link", fmt.Sprintf(`<%s?%s>; rel="next"`, req.URL.Path, q.Encode()))
		}
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = io.Copy(w, bytes.NewReader(body))
}

// Image is the repository name <Host>/<repo>.
func (r *Registry) Image(repo string) string { return r.Host + "/" + repo }

func (r *Registry) options() []remote.Option {
	if r.Username == "" {
		return nil
	}
	return []remote.Option{remote.WithAuth(&authn.Basic{Username: r.Username, Password: r.Password})}
}

// Push tags one random image (the same for every tag of the registry) as repo:tag.
func (r *Registry) Push(t testing.TB, repo string, tags ...string) {
	t.Helper()
	for i, tag := range tags {
		ref, err := name.NewTag(r.Image(repo) + ":" + tag)
		if err != nil {
			t.Fatal(err)
		}
		write := remote.Write
		if i > 0 { // the blobs are there: a manifest PUT is enough
			write = func(ref name.Reference, img v1.Image, opts ...remote.Option) error {
				return remote.Tag(ref.(name.Tag), img, opts...)
			}
		}
		if err := write(ref, r.img, r.options()...); err != nil {
			t.Fatal(err)
		}
	}
}

// PushNew tags a new random image as repo:tag and returns its digest.
func (r *Registry) PushNew(t testing.TB, repo, tag string) string {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.NewTag(r.Image(repo) + ":" + tag)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, r.options()...); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// Digest is the digest of the image Push tags.
func (r *Registry) Digest(t testing.TB) string {
	t.Helper()
	d, err := r.img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}
