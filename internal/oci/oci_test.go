package oci_test

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/egress"
	"github.com/gitsync-dev/gitsync/internal/oci"
)

// testRegistry is go-containerregistry's in-process registry on the loopback, counting
// requests by method and path kind.
type testRegistry struct {
	host string
	mu   sync.Mutex
	hits map[string]int // "GET blob", "HEAD manifest", "GET tags", …
	user string
	pass string
	// noHead answers 405 to a HEAD of a manifest, as some registries do.
	noHead bool
}

func newRegistry(t *testing.T, user, pass string) *testRegistry {
	r := &testRegistry{hits: map[string]int{}, user: user, pass: pass}
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.user != "" {
			if u, p, ok := req.BasicAuth(); !ok || u != r.user || p != r.pass {
				w.Header().Set("WWW-Authenticate", `Basic realm="registry"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		kind := "other"
		switch {
		case strings.Contains(req.URL.Path, "/blobs/"):
			kind = "blob"
		case strings.Contains(req.URL.Path, "/manifests/"):
			kind = "manifest"
		case strings.HasSuffix(req.URL.Path, "/tags/list"):
			kind = "tags"
		}
		r.mu.Lock()
		r.hits[req.Method+" "+kind]++
		noHead := r.noHead
		r.mu.Unlock()
		if noHead && kind == "manifest" && req.Method == http.MethodHead {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		inner.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.host = strings.TrimPrefix(srv.URL, "http://")
	return r
}

func (r *testRegistry) count(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hits[key]
}

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func push(t *testing.T, c *oci.Client, url, dir string) string {
	t.Helper()
	// A fixed creation time: the same content then packs to the same manifest digest.
	ref, err := c.Push(context.Background(), oci.PushRequest{URL: url, Dir: dir, Source: "https://example.com/repo.git", Revision: "main@sha1:abc",
		Created: time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

func TestPushThenPullUnpacksTheDirectory(t *testing.T) {
	reg := newRegistry(t, "", "")
	c, err := oci.New(t.TempDir(), oci.Options{})
	if err != nil {
		t.Fatal(err)
	}
	src := writeTree(t, map[string]string{"deploy/cm.yaml": "kind: ConfigMap\n", "kustomization.yaml": "resources: [deploy/cm.yaml]\n"})
	if err := os.MkdirAll(filepath.Join(src, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, ".git", "HEAD"), []byte("ref"), 0o644); err != nil {
		t.Fatal(err)
	}
	pushed := push(t, c, "oci://"+reg.host+"/apps/web:v1.0.0", src)

	art, err := c.Pull(context.Background(), oci.Request{URL: "oci://" + reg.host + "/apps/web", Ref: oci.Ref{Tag: "v1.0.0"}, Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(pushed, "@"+art.Digest) || art.Revision != "v1.0.0@"+art.Digest || !art.Fetched {
		t.Fatalf("pushed %s, pulled %+v", pushed, art)
	}
	if art.Metadata[gitsyncv1.OCISourceAnnotation] != "https://example.com/repo.git" || art.Metadata[gitsyncv1.OCIRevisionAnnotation] != "main@sha1:abc" {
		t.Fatalf("metadata %v", art.Metadata)
	}
	got, err := os.ReadFile(filepath.Join(art.Dir, "deploy", "cm.yaml"))
	if err != nil || string(got) != "kind: ConfigMap\n" {
		t.Fatalf("unpacked %q, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(art.Dir, ".git")); !os.IsNotExist(err) {
		t.Fatalf(".git was packed: %v", err)
	}

	// The same content packs to the same digest.
	again := push(t, c, "oci://"+reg.host+"/apps/web:v1.0.1", src)
	if !strings.HasSuffix(again, "@"+art.Digest) {
		t.Fatalf("repacking changed the digest: %s vs %s", again, art.Digest)
	}
}

func TestPollWithTheSameDigestDownloadsNothing(t *testing.T) {
	reg := newRegistry(t, "", "")
	c, _ := oci.New(t.TempDir(), oci.Options{})
	push(t, c, "oci://"+reg.host+"/apps/web:latest", writeTree(t, map[string]string{"a.yaml": "a: 1\n"}))
	req := oci.Request{URL: "oci://" + reg.host + "/apps/web", Key: "k"}
	first, err := c.Pull(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	blobs, manifests := reg.count("GET blob"), reg.count("GET manifest")
	req.Current = first.Digest
	second, err := c.Pull(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if second.Fetched || second.Dir != first.Dir || second.Revision != "latest@"+first.Digest {
		t.Fatalf("second poll: %+v", second)
	}
	if reg.count("GET blob") != blobs || reg.count("GET manifest") != manifests {
		t.Fatalf("a poll of an unchanged digest downloaded: blobs %d -> %d, manifests %d -> %d",
			blobs, reg.count("GET blob"), manifests, reg.count("GET manifest"))
	}
	if reg.count("HEAD manifest") < 2 {
		t.Fatalf("HEAD manifest requests: %d", reg.count("HEAD manifest"))
	}
}

func TestSemverPicksTheHighestTagInRange(t *testing.T) {
	reg := newRegistry(t, "", "")
	c, _ := oci.New(t.TempDir(), oci.Options{})
	for _, v := range []string{"1.0.0", "1.2.0", "1.10.1", "2.0.0", "latest"} {
		push(t, c, "oci://"+reg.host+"/apps/web:"+v, writeTree(t, map[string]string{"v.yaml": "v: " + v + "\n"}))
	}
	art, err := c.Pull(context.Background(), oci.Request{URL: "oci://" + reg.host + "/apps/web", Ref: oci.Ref{SemVer: ">=1.0.0 <2.0.0"}, Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(art.Revision, "1.10.1@sha256:") {
		t.Fatalf("revision %s", art.Revision)
	}
	_, err = c.Pull(context.Background(), oci.Request{URL: "oci://" + reg.host + "/apps/web", Ref: oci.Ref{SemVer: ">=3"}, Key: "k"})
	if !errors.Is(err, oci.ErrRefNotFound) {
		t.Fatalf("a range with no tag: %v", err)
	}
	_, err = c.Pull(context.Background(), oci.Request{URL: "oci://" + reg.host + "/apps/web", Ref: oci.Ref{SemVer: "not a range"}, Key: "k"})
	if !errors.Is(err, oci.ErrRefInvalid) {
		t.Fatalf("a bad range: %v", err)
	}

	// A digest ref pulls that manifest, whatever the tags say; its revision is the digest.
	byDigest, err := c.Pull(context.Background(), oci.Request{URL: "oci://" + reg.host + "/apps/web", Ref: oci.Ref{Digest: art.Digest, Tag: "2.0.0"}, Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if byDigest.Revision != art.Digest {
		t.Fatalf("digest ref revision %s, want %s", byDigest.Revision, art.Digest)
	}
}

func TestPullWithDockerConfigCredentials(t *testing.T) {
	reg := newRegistry(t, "robot", "s3cret")
	config := `{"auths":{"` + reg.host + `":{"auth":"` + base64.StdEncoding.EncodeToString([]byte("robot:s3cret")) + `"}}}`
	auth, err := oci.AuthFromDockerConfig([]byte(config), reg.host)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := oci.New(t.TempDir(), oci.Options{})
	if _, err := c.Push(context.Background(), oci.PushRequest{URL: "oci://" + reg.host + "/apps/web:v1", Dir: writeTree(t, map[string]string{"a.yaml": "a: 1\n"}), Auth: auth}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pull(context.Background(), oci.Request{URL: "oci://" + reg.host + "/apps/web", Ref: oci.Ref{Tag: "v1"}, Auth: auth, Key: "k"}); err != nil {
		t.Fatal(err)
	}
	_, err = c.Pull(context.Background(), oci.Request{URL: "oci://" + reg.host + "/apps/web", Ref: oci.Ref{Tag: "v1"}, Key: "anonymous"})
	if !errors.Is(err, oci.ErrUnauthorized) {
		t.Fatalf("anonymous pull: %v", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Fatal("the error quotes the password")
	}
	if _, err := oci.AuthFromDockerConfig([]byte("{"), reg.host); err == nil {
		t.Fatal("a malformed config was accepted")
	}
}

func TestEgressGuardRefusesTheRegistry(t *testing.T) {
	reg := newRegistry(t, "", "")
	c, _ := oci.New(t.TempDir(), oci.Options{Egress: egress.New(egress.DefaultDeny)})
	_, err := c.Pull(context.Background(), oci.Request{URL: "oci://" + reg.host + "/apps/web", Key: "k"})
	if !errors.Is(err, egress.ErrDenied) {
		t.Fatalf("pull from the loopback through the default guard: %v", err)
	}
	if n := reg.count("HEAD manifest") + reg.count("GET manifest"); n != 0 {
		t.Fatalf("the registry was reached %d times", n)
	}
}

func TestLayerSelector(t *testing.T) {
	reg := newRegistry(t, "", "")
	c, _ := oci.New(t.TempDir(), oci.Options{})
	push(t, c, "oci://"+reg.host+"/apps/web:v1", writeTree(t, map[string]string{"a.yaml": "a: 1\n"}))
	url := "oci://" + reg.host + "/apps/web"
	_, err := c.Pull(context.Background(), oci.Request{URL: url, Ref: oci.Ref{Tag: "v1"}, MediaType: "application/vnd.example", Key: "k"})
	if !errors.Is(err, oci.ErrLayerInvalid) {
		t.Fatalf("a media type the artifact does not hold: %v", err)
	}
	art, err := c.Pull(context.Background(), oci.Request{URL: url, Ref: oci.Ref{Tag: "v1"}, Operation: gitsyncv1.OCILayerCopy, Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(art.Dir, "web.tgz"))
	if err != nil || len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
		t.Fatalf("copied layer: %d bytes, %v", len(data), err)
	}
	_, err = c.Pull(context.Background(), oci.Request{URL: url, Ref: oci.Ref{Tag: "v1"}, MaxSize: 10, Key: "k2"})
	if !errors.Is(err, oci.ErrTooLarge) {
		t.Fatalf("a layer over MaxSize: %v", err)
	}
}

// A registry that refuses HEAD is asked with a GET of the manifest (no blob).
func TestRegistryWithoutHeadIsAskedWithGet(t *testing.T) {
	reg := newRegistry(t, "", "")
	c, _ := oci.New(t.TempDir(), oci.Options{})
	push(t, c, "oci://"+reg.host+"/apps/web:v1", writeTree(t, map[string]string{"a.yaml": "a: 1\n"}))
	reg.mu.Lock()
	reg.noHead = true
	reg.mu.Unlock()
	req := oci.Request{URL: "oci://" + reg.host + "/apps/web", Ref: oci.Ref{Tag: "v1"}, Key: "k"}
	first, err := c.Pull(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	blobs := reg.count("GET blob")
	req.Current = first.Digest
	second, err := c.Pull(context.Background(), req)
	if err != nil || second.Fetched || second.Digest != first.Digest {
		t.Fatalf("second poll: %+v, %v", second, err)
	}
	if reg.count("GET blob") != blobs {
		t.Fatal("a poll of an unchanged digest downloaded a blob")
	}
}
