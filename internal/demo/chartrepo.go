package demo

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"time"
)

// chartRepoVersion is the version of the hello chart that the demo's chart repository
// serves.
const chartRepoVersion = "0.3.0"

// packageChart makes the .tgz of the demo chart (apps/hello-chart), as `helm package` would.
func packageChart() ([]byte, error) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	var names []string
	for name := range chartFiles {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		data := []byte(chartFiles[name])
		hdr := &tar.Header{Name: "hello/" + strings.TrimPrefix(name, "apps/hello-chart/"), Mode: 0o644,
			Size: int64(len(data)), ModTime: time.Unix(1700000000, 0), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// startChartRepo serves a Helm chart repository on the loopback (index.yaml with an
// ETag, and the hello chart's archive) until ctx ends, and returns its URL.
func startChartRepo(ctx context.Context) (string, error) {
	archive, err := packageChart()
	if err != nil {
		return "", fmt.Errorf("packaging the demo chart: %w", err)
	}
	sum := sha256.Sum256(archive)
	archiveName := "hello-" + chartRepoVersion + ".tgz"
	index := fmt.Sprintf("apiVersion: v1\nentries:\n  hello:\n    - apiVersion: v2\n      name: hello\n      version: %s\n      digest: %s\n      urls: [%s]\n",
		chartRepoVersion, hex.EncodeToString(sum[:]), archiveName)
	etag := fmt.Sprintf(`"%x"`, sha256.Sum256([]byte(index)))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /index.yaml", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", etag)
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		_, _ = w.Write([]byte(index))
	})
	mux.HandleFunc("GET /"+archiveName, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(archive) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	return "http://" + ln.Addr().String(), nil
}
