// Package chartserver serves Helm charts in process for tests: a chart repository over
// HTTPS (index.yaml with ETags, basic auth) and an OCI registry, each counting downloads.
package chartserver

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Package makes a chart archive (.tgz) of files, each path relative to the chart
// directory named name (Chart.yaml included).
func Package(t testing.TB, name string, files map[string]string) []byte {
	t.Helper()
	return PackageRaw(t, name+"/", files)
}

// PackageRaw makes a .tgz whose entries are prefix+path, unchecked (for archives that
// try to escape their root).
func PackageRaw(t testing.TB, prefix string, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		data := []byte(files[p])
		hdr := &tar.Header{Name: prefix + p, Mode: 0o644, Size: int64(len(data)), ModTime: time.Unix(1700000000, 0), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type version struct {
	name, version string
	archive       []byte
	prov          []byte // served at <archive URL>.prov when set
}

// Repo is a chart repository over HTTPS.
type Repo struct {
	URL string
	// CA is the PEM certificate the server's TLS certificate verifies with.
	CA []byte
	// Username and Password, when set, are required (basic auth).
	Username, Password string

	srv *httptest.Server

	mu       sync.Mutex
	versions []version
	fail     int

	// IndexRequests, IndexBytes and ChartDownloads count what clients asked for.
	IndexRequests, IndexBytes, ChartDownloads atomic.Int64
}

// NewRepo starts a chart repository; it stops with the test.
func NewRepo(t testing.TB) *Repo {
	r := &Repo{}
	r.srv = httptest.NewTLSServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	r.URL = r.srv.URL
	r.CA = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw})
	return r
}

// Add publishes a chart version (its archive as made by Package).
func (r *Repo) Add(name, ver string, archive []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.versions = append(r.versions, version{name: name, version: ver, archive: archive})
}

// AddProvenance serves prov as the provenance file (<archive URL>.prov) of a version
// already added.
func (r *Repo) AddProvenance(name, ver string, prov []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.versions {
		if r.versions[i].name == name && r.versions[i].version == ver {
			r.versions[i].prov = prov
		}
	}
}

// Fail makes every request answer code (0: serve normally again).
func (r *Repo) Fail(code int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail = code
}

// index renders index.yaml; the same charts give the same bytes.
func (r *Repo) index() []byte {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nentries:\n")
	byName := map[string][]version{}
	var names []string
	for _, v := range r.versions {
		if _, ok := byName[v.name]; !ok {
			names = append(names, v.name)
		}
		byName[v.name] = append(byName[v.name], v)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "  %s:\n", n)
		for _, v := range byName[n] {
			sum := sha256.Sum256(v.archive)
			fmt.Fprintf(&b, "    - apiVersion: v2\n      name: %s\n      version: %s\n      digest: %s\n      urls: [charts/%s-%s.tgz]\n",
				n, v.version, hex.EncodeToString(sum[:]), n, v.version)
		}
	}
	return []byte(b.String())
}

func (r *Repo) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	fail := r.fail
	versions := append([]version(nil), r.versions...)
	index := r.index()
	r.mu.Unlock()
	if fail != 0 {
		http.Error(w, http.StatusText(fail), fail)
		return
	}
	if r.Username != "" {
		if u, p, ok := req.BasicAuth(); !ok || u != r.Username || p != r.Password {
			w.Header().Set("WWW-Authenticate", `Basic realm="charts"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
	}
	switch {
	case req.URL.Path == "/index.yaml":
		r.IndexRequests.Add(1)
		sum := sha256.Sum256(index)
		etag := `"` + hex.EncodeToString(sum[:8]) + `"`
		w.Header().Set("ETag", etag)
		if req.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		r.IndexBytes.Add(int64(len(index)))
		_, _ = w.Write(index)
		return
	case strings.HasPrefix(req.URL.Path, "/charts/"):
		for _, v := range versions {
			if req.URL.Path == fmt.Sprintf("/charts/%s-%s.tgz", v.name, v.version) {
				r.ChartDownloads.Add(1)
				_, _ = w.Write(v.archive)
				return
			}
			if v.prov != nil && req.URL.Path == fmt.Sprintf("/charts/%s-%s.tgz.prov", v.name, v.version) {
				_, _ = w.Write(v.prov)
				return
			}
		}
	}
	http.NotFound(w, req)
}
