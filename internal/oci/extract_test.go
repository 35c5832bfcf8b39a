package oci_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitsync-dev/gitsync/internal/oci"
)

// entry is one tar entry of a test layer.
type entry struct {
	name, link string
	typ        byte
	body       string
}

func tarball(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Linkname: e.link, Mode: 0o644, Size: int64(len(e.body))}
		if e.typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestExtractRefusesWhatLeavesTheArtifact(t *testing.T) {
	file := entry{name: "ok.yaml", typ: tar.TypeReg, body: "a: 1\n"}
	for _, tc := range []struct {
		name    string
		entries []entry
		want    error
		says    string
	}{
		{"absolute path", []entry{{name: "/etc/passwd", typ: tar.TypeReg, body: "x"}}, oci.ErrLayerInvalid, "not a relative path"},
		{"dot-dot path", []entry{{name: "a/../../x", typ: tar.TypeReg, body: "x"}}, oci.ErrLayerInvalid, "outside the artifact"},
		{"absolute symlink", []entry{file, {name: "l", typ: tar.TypeSymlink, link: "/etc/passwd"}}, oci.ErrLayerInvalid, "outside the artifact"},
		{"climbing symlink", []entry{file, {name: "d/l", typ: tar.TypeSymlink, link: "../../secret"}}, oci.ErrLayerInvalid, "outside the artifact"},
		{"chained symlinks", []entry{{name: "a/", typ: tar.TypeDir}, {name: "a/s", typ: tar.TypeSymlink, link: ".."},
			{name: "y", typ: tar.TypeSymlink, link: "a/s/../x"}}, oci.ErrLayerInvalid, "symbolic link"},
		{"hard link", []entry{file, {name: "h", typ: tar.TypeLink, link: "ok.yaml"}}, oci.ErrLayerInvalid, "hard link"},
		{"device file", []entry{{name: "dev", typ: tar.TypeChar}}, oci.ErrLayerInvalid, "device file"},
		{"fifo", []entry{{name: "p", typ: tar.TypeFifo}}, oci.ErrLayerInvalid, "FIFO"},
		{"too deep", []entry{{name: strings.Repeat("d/", 70) + "f", typ: tar.TypeReg, body: "x"}}, oci.ErrLayerInvalid, "deeper than"},
		{"too many files", []entry{file, {name: "b", typ: tar.TypeReg}, {name: "c", typ: tar.TypeReg}, {name: "d", typ: tar.TypeReg}}, oci.ErrTooLarge, "more than 3 entries"},
		{"too many bytes", []entry{{name: "big", typ: tar.TypeReg, body: strings.Repeat("x", 200)}}, oci.ErrTooLarge, "over 100 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			err := oci.Extract(bytes.NewReader(tarball(t, tc.entries...)), dir, oci.Limits{MaxBytes: 100, MaxFiles: 3})
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("got %v, want %v saying %q", err, tc.want, tc.says)
			}
		})
	}
}

func TestExtractKeepsLinksInside(t *testing.T) {
	dir := t.TempDir()
	layer := tarball(t,
		entry{name: "base/", typ: tar.TypeDir},
		entry{name: "base/cm.yaml", typ: tar.TypeReg, body: "kind: ConfigMap\n"},
		entry{name: "prod/cm.yaml", typ: tar.TypeSymlink, link: "../base/cm.yaml"},
		entry{name: "run.sh", typ: tar.TypeReg, body: "#!/bin/sh\n"},
	)
	if err := oci.Extract(bytes.NewReader(layer), dir, oci.Limits{}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "prod", "cm.yaml"))
	if err != nil || string(got) != "kind: ConfigMap\n" {
		t.Fatalf("read through the link: %q, %v", got, err)
	}
	if err := oci.Extract(bytes.NewReader([]byte("not gzip")), t.TempDir(), oci.Limits{}); !errors.Is(err, oci.ErrLayerInvalid) {
		t.Fatalf("a layer that is not gzip: %v", err)
	}
}
