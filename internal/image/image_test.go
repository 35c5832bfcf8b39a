package image

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"io"
	"io/fs"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"
)

// stubBinary compiles a tiny static program with Compile (the same flags as gitsync's).
func stubBinary(t *testing.T, arch string) []byte {
	t.Helper()
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module stub\n\ngo 1.26\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nvar version string\n\nfunc main() { println(version) }\n"), 0o644))
	bin, err := Compile(context.Background(), dir, ".", arch, "-X main.version=v9.9.9")
	must(t, err)
	return bin
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

var certs = []byte("-----BEGIN CERTIFICATE-----\nnot a real one\n-----END CERTIFICATE-----\n")

func build(t *testing.T, bin []byte, arch string, created time.Time) v1.Image {
	t.Helper()
	img, err := Build(Options{Binary: bin, CACerts: certs, Created: created, Version: "v9.9.9",
		Platform: v1.Platform{OS: "linux", Architecture: arch}})
	must(t, err)
	return img
}

// readDir maps every file under dir to its content.
func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	must(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[rel], err = os.ReadFile(p)
		return err
	}))
	return files
}

// Two builds from separately compiled binaries give the same digest and the same OCI
// layout, byte for byte; another SOURCE_DATE_EPOCH gives another digest (the time is in it).
func TestReproducible(t *testing.T) {
	g := NewWithT(t)
	var digests []v1.Hash
	var layouts []map[string][]byte
	for range 2 {
		idx, err := Index(build(t, stubBinary(t, "amd64"), "amd64", time.Time{}))
		g.Expect(err).NotTo(HaveOccurred())
		d, err := idx.Digest()
		g.Expect(err).NotTo(HaveOccurred())
		digests = append(digests, d)
		dir := filepath.Join(t.TempDir(), "image")
		g.Expect(WriteLayout(dir, idx, "example.com/gitsync:v9.9.9")).To(Succeed())
		layouts = append(layouts, readDir(t, dir))
	}
	g.Expect(digests[1]).To(Equal(digests[0]))
	g.Expect(layouts[0]).To(HaveKey("index.json"))
	g.Expect(layouts[0]).To(HaveKey("oci-layout"))
	g.Expect(len(layouts[0])).To(BeNumerically(">=", 6), "oci-layout, index.json, image index, manifest, config, layer")
	g.Expect(layouts[1]).To(Equal(layouts[0]))
	g.Expect(string(layouts[0]["index.json"])).To(ContainSubstring(`"org.opencontainers.image.ref.name": "example.com/gitsync:v9.9.9"`))

	later, err := build(t, stubBinary(t, "amd64"), "amd64", time.Unix(1700000000, 0)).Digest()
	g.Expect(err).NotTo(HaveOccurred())
	img0, err := Index(build(t, stubBinary(t, "amd64"), "amd64", time.Time{}))
	g.Expect(err).NotTo(HaveOccurred())
	m, err := img0.IndexManifest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(later).NotTo(Equal(m.Manifests[0].Digest))
}

// The image runs /gitsync run as the non-root user 65532, which /etc/passwd and
// /etc/group name.
func TestConfigIsNonRoot(t *testing.T) {
	g := NewWithT(t)
	img := build(t, stubBinary(t, "amd64"), "amd64", time.Unix(1700000000, 0))
	cfg, err := img.ConfigFile()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.Config.User).To(Equal("65532:65532"))
	g.Expect(cfg.Config.Entrypoint).To(Equal([]string{"/gitsync", "run"}))
	g.Expect(cfg.OS).To(Equal("linux"))
	g.Expect(cfg.Architecture).To(Equal("amd64"))
	g.Expect(cfg.Created.Time.Equal(time.Unix(1700000000, 0))).To(BeTrue())
	g.Expect(cfg.Config.Labels).To(HaveKeyWithValue("org.opencontainers.image.version", "v9.9.9"))
	files := layerFiles(t, img)
	g.Expect(string(files["etc/passwd"].data)).To(ContainSubstring("nonroot:x:65532:65532:"))
	g.Expect(string(files["etc/group"].data)).To(ContainSubstring("nonroot:x:65532:"))
}

type entry struct {
	hdr  *tar.Header
	data []byte
}

func layerFiles(t *testing.T, img v1.Image) map[string]entry {
	t.Helper()
	layers, err := img.Layers()
	must(t, err)
	if len(layers) != 1 {
		t.Fatalf("%d layers, want 1", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	must(t, err)
	defer rc.Close()
	tr := tar.NewReader(rc)
	files := map[string]entry{}
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		must(t, err)
		data, err := io.ReadAll(tr)
		must(t, err)
		files[h.Name] = entry{hdr: h, data: data}
		names = append(names, h.Name)
	}
	for i := 1; i < len(names); i++ {
		if names[i-1] >= names[i] {
			t.Errorf("tar entries not sorted: %s before %s", names[i-1], names[i])
		}
	}
	return files
}

// The layer holds /gitsync, executable, the very binary given (an ELF of the platform's
// machine), the CA bundle, and every entry is root-owned at the image's time.
func TestLayerHoldsBinary(t *testing.T) {
	g := NewWithT(t)
	created := time.Unix(1700000000, 0)
	bin := stubBinary(t, "arm64")
	files := layerFiles(t, build(t, bin, "arm64", created))
	g.Expect(files).To(HaveKey("gitsync"))
	f := files["gitsync"]
	g.Expect(f.hdr.Typeflag).To(Equal(byte(tar.TypeReg)))
	g.Expect(f.hdr.Mode & 0o111).To(Equal(int64(0o111)))
	g.Expect(bytes.Equal(f.data, bin)).To(BeTrue())
	exe, err := elf.NewFile(bytes.NewReader(f.data))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(exe.Machine).To(Equal(elf.EM_AARCH64))
	g.Expect(files).To(HaveKey("etc/ssl/certs/ca-certificates.crt"))
	g.Expect(files["etc/ssl/certs/ca-certificates.crt"].data).To(Equal(certs))
	g.Expect(files).To(HaveKey("tmp/"))
	for name, e := range files {
		g.Expect(e.hdr.ModTime.Equal(created)).To(BeTrue(), name)
		g.Expect(e.hdr.Uid).To(BeZero(), name)
		g.Expect(e.hdr.Gid).To(BeZero(), name)
	}
}

// An index of two platforms names each; pushed to a registry (in process) it reads back
// at the same digest, and the layout's index points at it.
func TestIndexPushAndLayout(t *testing.T) {
	g := NewWithT(t)
	amd := build(t, stubBinary(t, "amd64"), "amd64", time.Time{})
	arm := build(t, stubBinary(t, "arm64"), "arm64", time.Time{})
	idx, err := Index(amd, arm)
	g.Expect(err).NotTo(HaveOccurred())
	m, err := idx.IndexManifest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(m.Manifests).To(HaveLen(2))
	g.Expect(m.Manifests[0].Platform.Architecture).To(Equal("amd64"))
	g.Expect(m.Manifests[1].Platform.Architecture).To(Equal("arm64"))
	want, err := idx.Digest()
	g.Expect(err).NotTo(HaveOccurred())
	size, err := Size(idx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(size).To(BeNumerically(">", 2*len(certs)))

	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	ref := strings.TrimPrefix(srv.URL, "http://") + "/gitsync:v9.9.9"
	g.Expect(Push(context.Background(), idx, ref)).To(Succeed())
	r, err := name.ParseReference(ref)
	g.Expect(err).NotTo(HaveOccurred())
	desc, err := remote.Head(r)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(desc.Digest).To(Equal(want))

	dir := filepath.Join(t.TempDir(), "image")
	g.Expect(WriteLayout(dir, idx, ref)).To(Succeed())
	p, err := layout.FromPath(dir)
	g.Expect(err).NotTo(HaveOccurred())
	top, err := p.ImageIndex()
	g.Expect(err).NotTo(HaveOccurred())
	tm, err := top.IndexManifest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tm.Manifests).To(HaveLen(1))
	g.Expect(tm.Manifests[0].Digest).To(Equal(want))
}
