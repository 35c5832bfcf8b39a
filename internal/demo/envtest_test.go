package demo

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/gitsync-dev/gitsync/internal/localcluster"
)

// hack/setup-envtest.sh is tested on directories of its own (ENVTEST_ASSETS_DIR), with
// the binaries the tests already use: never by building them again (minutes).

const envtestPins = "etcd=v3.6.8 kube-apiserver=v1.37.1"

// setupEnvtest runs hack/setup-envtest.sh with env added; it returns stdout and stderr.
func setupEnvtest(t *testing.T, env ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(repoRoot(t), "hack", "setup-envtest.sh"))
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// realAssets is the directory of the etcd and kube-apiserver the tests run.
func realAssets(t *testing.T) string {
	t.Helper()
	dir, err := localcluster.Assets()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// A directory that holds both binaries at the pinned versions is used as it is, at once,
// silently.
func TestSetupEnvtestReusesItsCache(t *testing.T) {
	g := NewWithT(t)
	real := realAssets(t)
	dir := filepath.Join(t.TempDir(), "assets")
	g.Expect(os.Mkdir(dir, 0o755)).To(Succeed())
	for _, name := range []string{"etcd", "kube-apiserver"} {
		g.Expect(os.Symlink(filepath.Join(real, name), filepath.Join(dir, name))).To(Succeed())
	}
	g.Expect(os.WriteFile(filepath.Join(dir, ".versions"), []byte(envtestPins+"\n"), 0o644)).To(Succeed())
	stdout, stderr, err := setupEnvtest(t, "ENVTEST_ASSETS_DIR="+dir)
	g.Expect(err).NotTo(HaveOccurred(), stderr)
	g.Expect(stdout).To(Equal(dir + "\n"))
	g.Expect(stderr).To(BeEmpty())
}

// envtestIndex serves setup-envtest's index and one archive (controller-tools' layout)
// of the binaries in real, for this machine's platform.
func envtestIndex(t *testing.T, real string) string {
	t.Helper()
	name := fmt.Sprintf("envtest-v1.37.1-%s-%s.tar.gz", runtime.GOOS, runtime.GOARCH)
	path := filepath.Join(t.TempDir(), name)
	file, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	hash := sha512.New()
	zw, err := gzip.NewWriterLevel(io.MultiWriter(file, hash), gzip.NoCompression) // 200 MB: not worth compressing here
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(zw)
	for _, name := range []string{"etcd", "kube-apiserver"} {
		f, err := os.Open(filepath.Join(real, name))
		if err != nil {
			t.Fatal(err)
		}
		st, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		if err := tw.WriteHeader(&tar.Header{Name: "controller-tools/envtest/" + name, Mode: 0o755, Size: st.Size(), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(tw, f); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := file.Close(); err != nil {
		t.Fatal(err)
	}
	sum := hex.EncodeToString(hash.Sum(nil))
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	mux.HandleFunc("/index.yaml", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "releases:\n  v1.37.1:\n    %s:\n      hash: %s\n      selfLink: %s/%s\n", name, sum, srv.URL, name)
	})
	mux.HandleFunc("/"+name, func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, path)
	})
	return srv.URL + "/index.yaml"
}

// Where prebuilt binaries can be downloaded, setup-envtest fetches them (controller-tools'
// archive, here from a local index): no build. The next run reuses them.
func TestSetupEnvtestFetchesPrebuiltBinaries(t *testing.T) {
	g := NewWithT(t)
	real := realAssets(t)
	index := envtestIndex(t, real)
	dir := filepath.Join(t.TempDir(), "assets")
	env := []string{"ENVTEST_ASSETS_DIR=" + dir, "GITSYNC_ENVTEST_INDEX=" + index, "GITSYNC_ENVTEST_FETCH_TIMEOUT=600"}
	stdout, stderr, err := setupEnvtest(t, env...)
	g.Expect(err).NotTo(HaveOccurred(), stderr)
	g.Expect(stdout).To(Equal(dir+"\n"), stderr)
	g.Expect(stderr).To(ContainSubstring("fetched prebuilt binaries"))
	g.Expect(stderr).NotTo(ContainSubstring("building"))
	for _, name := range []string{"etcd", "kube-apiserver"} {
		want, err := os.ReadFile(filepath.Join(real, name))
		g.Expect(err).NotTo(HaveOccurred())
		got, err := os.ReadFile(filepath.Join(dir, name))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(bytes.Equal(got, want)).To(BeTrue(), "%s differs from the archive's", name)
	}
	g.Expect(os.ReadFile(filepath.Join(dir, ".versions"))).To(Equal([]byte(envtestPins + "\n")))
	g.Expect(os.ReadFile(filepath.Join(dir, ".origin"))).To(HavePrefix("prebuilt: "))

	stdout, stderr, err = setupEnvtest(t, env...)
	g.Expect(err).NotTo(HaveOccurred(), stderr)
	g.Expect(stdout).To(Equal(dir + "\n"))
	g.Expect(stderr).To(BeEmpty())
}

// Without prebuilt binaries (no download reachable: here an index without the version) it
// builds them, and says so before it starts — that the first run takes minutes, then each
// step as it begins. (An etcd version that does not exist makes the first step fail at
// once, instead of building for minutes.)
func TestSetupEnvtestSaysItBuildsBeforeBuilding(t *testing.T) {
	g := NewWithT(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "releases: {}\n")
	}))
	defer srv.Close()
	dir := filepath.Join(t.TempDir(), "assets")
	_, stderr, err := setupEnvtest(t, "ENVTEST_ASSETS_DIR="+dir, "GITSYNC_ENVTEST_INDEX="+srv.URL+"/index.yaml", "ETCD_VERSION=v0.0.0-nonexistent")
	g.Expect(err).To(HaveOccurred(), stderr)
	notice := strings.Index(stderr, "which takes a few minutes")
	tried := strings.Index(stderr, "trying prebuilt binaries first")
	fellBack := strings.Index(stderr, "building from Go modules instead")
	step := strings.Index(stderr, "[1/2] building etcd v0.0.0-nonexistent...")
	g.Expect([]int{notice, tried, fellBack, step}).NotTo(ContainElement(-1), stderr)
	g.Expect(notice < tried && tried < fellBack && fellBack < step).To(BeTrue(), stderr)
	g.Expect(stderr).To(ContainSubstring("[1/2] building etcd v0.0.0-nonexistent failed"))
	g.Expect(filepath.Join(dir, ".versions")).NotTo(BeAnExistingFile())
}
