package chartserver

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Media types of a Helm chart stored in an OCI registry.
const (
	chartLayer  = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
	chartConfig = "application/vnd.cncf.helm.config.v1+json"
)

// Registry is an OCI registry (go-containerregistry's in-process one) over plain HTTP on
// the loopback, with basic auth when Username is set.
type Registry struct {
	// Host is host:port; charts live under oci://<Host>/charts.
	Host               string
	Username, Password string

	// TagLists and BlobDownloads count what clients asked for.
	TagLists, BlobDownloads atomic.Int64
}

// NewRegistry starts a registry; it stops with the test.
func NewRegistry(t testing.TB, username, password string) *Registry {
	r := &Registry{Username: username, Password: password}
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.Username != "" {
			if u, p, ok := req.BasicAuth(); !ok || u != r.Username || p != r.Password {
				w.Header().Set("WWW-Authenticate", `Basic realm="registry"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		switch {
		case strings.HasSuffix(req.URL.Path, "/tags/list"):
			r.TagLists.Add(1)
		case strings.Contains(req.URL.Path, "/blobs/") && req.Method == http.MethodGet:
			r.BlobDownloads.Add(1)
		}
		inner.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.Host = strings.TrimPrefix(srv.URL, "http://")
	return r
}

// URL is the oci:// URL of the registry's charts.
func (r *Registry) URL() string { return "oci://" + r.Host + "/charts" }

// Push stores a chart archive as <Host>/charts/<name>:<version>, as `helm push` lays it out.
func (r *Registry) Push(t testing.TB, chartName, version string, archive []byte) {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, static.NewLayer(archive, chartLayer))
	if err != nil {
		t.Fatal(err)
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, chartConfig)
	ref, err := name.ParseReference(r.Host + "/charts/" + chartName + ":" + strings.ReplaceAll(version, "+", "_"))
	if err != nil {
		t.Fatal(err)
	}
	var opts []remote.Option
	if r.Username != "" {
		opts = append(opts, remote.WithAuth(&authn.Basic{Username: r.Username, Password: r.Password}))
	}
	if err := remote.Write(ref, img, opts...); err != nil {
		t.Fatal(err)
	}
}
