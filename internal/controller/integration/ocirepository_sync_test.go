package integration

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/cli"
	"github.com/gitsync-dev/gitsync/internal/controller/sources"
	"github.com/gitsync-dev/gitsync/internal/operations"
	"github.com/gitsync-dev/gitsync/internal/sourceid"
	"github.com/gitsync-dev/gitsync/internal/testutil/chartserver"
	"github.com/gitsync-dev/gitsync/internal/testutil/signing"
)

// ociMaxArtifactSize is the suite's --max-artifact-size for OCIRepositories: a layer
// over it is refused.
const ociMaxArtifactSize = 256 << 10

// pushArtifact runs `gitsync push artifact` in process: files packed and pushed as
// <host>/manifests/web:<tag>.
func pushArtifact(t *testing.T, host, tag string, files map[string]string) {
	t.Helper()
	dir := t.TempDir()
	for n, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out, errOut bytes.Buffer
	root := cli.NewRootCommand(cli.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, nil)
	code := cli.Execute(context.Background(), root, []string{"push", "artifact", "oci://" + host + "/manifests/web:" + tag,
		"--path", dir, "--source", "https://git.example.com/web.git", "--revision", "main@sha1:" + strings.Repeat("a", 40)})
	if code != 0 || !strings.Contains(out.String(), "pushed "+host+"/manifests/web:"+tag+"@sha256:") {
		t.Fatalf("gitsync push artifact: exit %d\n%s%s", code, out.String(), errOut.String())
	}
}

// newOCIFixture creates an OCIRepository "oci" of <host>/manifests/web (semver range, a
// short interval) and an Application "web" of it, pruning, in a fresh namespace.
func newOCIFixture(t *testing.T, host, semver string, mutate ...func(*gitsyncv1.OCIRepository)) *appFixture {
	t.Helper()
	f := &appFixture{t: t, ns: env.Namespace(t)}
	repo := &gitsyncv1.OCIRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "oci", Namespace: f.ns},
		Spec: gitsyncv1.OCIRepositorySpec{URL: "oci://" + host + "/manifests/web", Ref: &gitsyncv1.OCIRepositoryRef{SemVer: semver},
			Interval: &metav1.Duration{Duration: 500 * time.Millisecond}},
	}
	for _, m := range mutate {
		m(repo)
	}
	if err := env.Client.Create(context.Background(), repo); err != nil {
		t.Fatal(err)
	}
	f.app("web", func(a *gitsyncv1.Application) {
		a.Spec.SourceRef = gitsyncv1.SourceReference{Kind: gitsyncv1.OCIRepositoryKind, Name: "oci"}
		a.Spec.Prune = true
	})
	return f
}

func ociRepo(g Gomega, ns string) *gitsyncv1.OCIRepository {
	repo := &gitsyncv1.OCIRepository{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "oci"}, repo)).To(Succeed())
	return repo
}

// waitOCIRevision waits until the OCIRepository's artifact is at tag, and returns it.
func waitOCIRevision(t *testing.T, ns, tag string) *gitsyncv1.OCIArtifact {
	t.Helper()
	var art *gitsyncv1.OCIArtifact
	NewWithT(t).Eventually(func(g Gomega) {
		art = ociRepo(g, ns).Status.Artifact
		g.Expect(art).NotTo(BeNil())
		g.Expect(art.Revision).To(HavePrefix(tag + "@sha256:"))
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
	return art
}

// An artifact pushed by `gitsync push artifact` syncs through an Application (a
// kustomization in it); a poll that finds the same digest downloads no blob; a new tag
// within the semver range is applied, one outside it is not.
func TestOCIRepositoryPushedArtifactSyncs(t *testing.T) {
	g := NewWithT(t)
	reg := chartserver.NewRegistry(t, "", "")
	pushArtifact(t, reg.Host, "1.0.0", map[string]string{
		"kustomization.yaml": "resources: [cm.yaml]\n",
		"cm.yaml":            configMapYAML("web", "one"),
	})
	f := newOCIFixture(t, reg.Host, ">=1.0.0 <2.0.0")

	art := waitOCIRevision(t, f.ns, "1.0.0")
	g.Expect(art.Metadata).To(HaveKeyWithValue(gitsyncv1.OCISourceAnnotation, "https://git.example.com/web.git"))
	g.Expect(art.Metadata).To(HaveKeyWithValue(gitsyncv1.OCIRevisionAnnotation, "main@sha1:"+strings.Repeat("a", 40)))
	g.Expect(art.URL).To(Equal(reg.Host + "/manifests/web:1.0.0"))
	f.waitAppliedAt("web", art.Revision)
	g.Expect(f.configMap(g, "web").Data["value"]).To(Equal("one"))

	// Polls at the same digest (the interval is 500ms; a request forces one more) fetch
	// no blob and change nothing.
	blobs := reg.BlobDownloads.Load()
	repo := ociRepo(g, f.ns)
	base := client.MergeFrom(repo.DeepCopy())
	requested := gitsyncv1.RequestReconcile(repo, time.Now())
	g.Expect(env.Client.Patch(context.Background(), repo, base)).To(Succeed())
	g.Eventually(func(g Gomega) {
		repo := ociRepo(g, f.ns)
		g.Expect(repo.Status.LastHandledReconcileAt).To(Equal(requested))
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
	g.Expect(reg.BlobDownloads.Load()).To(Equal(blobs), "a poll of an unchanged digest downloaded a blob")
	g.Expect(ociRepo(g, f.ns).Status.Artifact.LastUpdateTime).To(Equal(art.LastUpdateTime))

	// A new tag in the range is applied; one above it is not.
	pushArtifact(t, reg.Host, "2.0.0", map[string]string{"cm.yaml": configMapYAML("web", "three")})
	pushArtifact(t, reg.Host, "1.1.0", map[string]string{
		"kustomization.yaml": "resources: [cm.yaml]\n",
		"cm.yaml":            configMapYAML("web", "two"),
	})
	art = waitOCIRevision(t, f.ns, "1.1.0")
	app := f.waitAppliedAt("web", art.Revision)
	g.Expect(f.configMap(g, "web").Data["value"]).To(Equal("two"))

	// The people's tools (gitsync build, diff) render the same artifact, pulled by digest.
	rendered, err := operations.RenderFromSource(context.Background(), env.Client, app, "", nil, false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rendered.From).To(ContainSubstring(art.Revision))
	g.Expect(rendered.Objects).To(HaveLen(1))
	g.Expect(rendered.Objects[0].GetName()).To(Equal("web"))
	g.Expect(rendered.Objects[0].Object["data"]).To(HaveKeyWithValue("value", "two"))

	// The artifact GC keeps what the OCIRepository points at.
	keep, err := sources.OCIArtifactsInUse(context.Background(), env.Client, ociArtifacts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(keep).To(HaveKey(sourceid.OCICheckoutDir(ociArtifacts, ociRepo(g, f.ns), art.Digest)))
}

// symlinkLayer is a Flux content layer holding a ConfigMap and a link out of the artifact.
func symlinkLayer(t *testing.T) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	cm := configMapYAML("web", "evil")
	for _, h := range []*tar.Header{
		{Name: "cm.yaml", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(cm))},
		{Name: "passwd.yaml", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"},
	} {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(cm)); err != nil {
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

// pushLayer pushes one Flux content layer as <host>/manifests/web:<tag>, bypassing the CLI.
func pushLayer(t *testing.T, host, tag string, layer []byte) {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, static.NewLayer(layer, gitsyncv1.FluxContentMediaType))
	if err != nil {
		t.Fatal(err)
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	ref, err := name.ParseReference(host + "/manifests/web:" + tag)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
}

// A layer with a link out of the artifact, then one over the size limit, are refused:
// the OCIRepository is Ready=False with the reason and keeps its artifact, and the
// Application stays at the revision it applied.
func TestOCIRepositoryRefusesUnsafeLayersAndKeepsTheArtifact(t *testing.T) {
	g := NewWithT(t)
	reg := chartserver.NewRegistry(t, "", "")
	pushArtifact(t, reg.Host, "1.0.0", map[string]string{"cm.yaml": configMapYAML("web", "one")})
	f := newOCIFixture(t, reg.Host, ">=1.0.0")
	good := waitOCIRevision(t, f.ns, "1.0.0")
	f.waitAppliedAt("web", good.Revision)

	for _, tc := range []struct {
		tag, reason, says string
		push              func()
	}{
		{"1.1.0", gitsyncv1.LayerInvalidReason, "outside the artifact", func() { pushLayer(t, reg.Host, "1.1.0", symlinkLayer(t)) }},
		{"1.2.0", gitsyncv1.TooLargeReason, "over the limit", func() {
			noise := make([]byte, 2*ociMaxArtifactSize)
			_, _ = rand.Read(noise)
			pushArtifact(t, reg.Host, "1.2.0", map[string]string{"cm.yaml": configMapYAML("web", "big"), "noise.bin": string(noise)})
		}},
	} {
		tc.push()
		g.Eventually(func(g Gomega) {
			repo := ociRepo(g, f.ns)
			ready := apimeta.FindStatusCondition(repo.Status.Conditions, gitsyncv1.ReadyCondition)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(ready.Reason).To(Equal(tc.reason), ready.Message)
			g.Expect(ready.Message).To(ContainSubstring(tc.tag))
			g.Expect(ready.Message).To(ContainSubstring(tc.says))
			g.Expect(repo.Status.Artifact.Revision).To(Equal(good.Revision))
		}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
		app := f.get(g, "web")
		g.Expect(app.Status.LastAppliedRevision).To(Equal(good.Revision))
		g.Expect(f.configMap(g, "web").Data["value"]).To(Equal("one"))
	}
}

// digestOf is the manifest digest of <host>/manifests/web:<tag>.
func digestOf(t *testing.T, host, tag string) name.Digest {
	t.Helper()
	ref, err := name.ParseReference(host + "/manifests/web:" + tag)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Head(ref)
	if err != nil {
		t.Fatal(err)
	}
	return ref.Context().Digest(desc.Digest.String())
}

// spec.verify with cosign: a signed artifact syncs with its signer in status; a newer tag
// unsigned, or signed by another key, is VerificationFailed: nothing of it is pulled or
// applied, the verified artifact and the objects applied from it stay.
func TestOCIRepositoryCosignVerification(t *testing.T) {
	g := NewWithT(t)
	reg := chartserver.NewRegistry(t, "", "")
	key, other := signing.NewCosignKey(t), signing.NewCosignKey(t)
	pushArtifact(t, reg.Host, "1.0.0", map[string]string{"cm.yaml": configMapYAML("web", "one")})
	signed := digestOf(t, reg.Host, "1.0.0")
	signing.Cosign(t, signed, key, signed.DigestStr())
	f := newOCIFixture(t, reg.Host, ">=1.0.0", func(r *gitsyncv1.OCIRepository) {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "keys", Namespace: r.Namespace}, Data: map[string][]byte{"cosign.pub": key.Public}}
		g.Expect(env.Client.Create(context.Background(), s)).To(Succeed())
		r.Spec.Verify = &gitsyncv1.OCIRepositoryVerification{Provider: "cosign", SecretRef: &gitsyncv1.LocalObjectReference{Name: "keys"}}
	})
	art := waitOCIRevision(t, f.ns, "1.0.0")
	g.Expect(art.Signer).To(ContainSubstring(key.Fingerprint))
	f.waitAppliedAt("web", art.Revision)

	for _, tc := range []struct{ tag, value string }{{"1.1.0", "unsigned"}, {"1.2.0", "other key"}} {
		pushArtifact(t, reg.Host, tc.tag, map[string]string{"cm.yaml": configMapYAML("web", tc.value)})
		if tc.tag == "1.2.0" {
			d := digestOf(t, reg.Host, tc.tag)
			signing.Cosign(t, d, other, d.DigestStr())
		}
		g.Eventually(func(g Gomega) {
			repo := ociRepo(g, f.ns)
			ready := apimeta.FindStatusCondition(repo.Status.Conditions, gitsyncv1.ReadyCondition)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Reason).To(Equal(gitsyncv1.VerificationFailedReason), ready.Message)
			g.Expect(ready.Message).To(ContainSubstring(tc.tag))
			g.Expect(repo.Status.Artifact.Revision).To(Equal(art.Revision))
		}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
		f.waitAppliedAt("web", art.Revision)
		g.Expect(f.configMap(g, "web").Data["value"]).To(Equal("one"))
		// Only signatures were read: no content layer of the refused artifact.
		g.Expect(ociArtifacts.ArtifactDir(sourceid.OCIKey(ociRepo(g, f.ns)), digestOf(t, reg.Host, tc.tag).DigestStr(),
			gitsyncv1.FluxContentMediaType, gitsyncv1.OCILayerExtract)).NotTo(BeADirectory())
	}

	// An OCIRepository whose only artifact is unsigned: its Application applies nothing.
	fresh := newOCIFixture(t, reg.Host, "=1.1.0", func(r *gitsyncv1.OCIRepository) {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "keys", Namespace: r.Namespace}, Data: map[string][]byte{"cosign.pub": key.Public}}
		g.Expect(env.Client.Create(context.Background(), s)).To(Succeed())
		r.Spec.Verify = &gitsyncv1.OCIRepositoryVerification{Provider: "cosign", SecretRef: &gitsyncv1.LocalObjectReference{Name: "keys"}}
	})
	g.Expect(fresh.waitNotReady("web", gitsyncv1.VerificationFailedReason)).To(ContainSubstring("1.1.0"))
	g.Expect(ociRepo(g, fresh.ns).Status.Artifact).To(BeNil())
	g.Expect(fresh.exists(g, &corev1.ConfigMap{}, "web")).To(BeFalse())
}

// A registry that asks for credentials: the dockerconfigjson Secret of spec.secretRef
// pulls; a Secret with the wrong password is AuthenticationFailed, naming no password.
func TestOCIRepositoryWithDockerConfigSecret(t *testing.T) {
	g := NewWithT(t)
	reg := chartserver.NewRegistry(t, "robot", "s3cret")
	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, "cm.yaml"), []byte(configMapYAML("web", "private")), 0o644)).To(Succeed())
	var out, errOut bytes.Buffer
	root := cli.NewRootCommand(cli.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, nil)
	code := cli.Execute(context.Background(), root, []string{"push", "artifact", "oci://" + reg.Host + "/manifests/web:1.0.0",
		"--path", dir, "--creds", "robot:s3cret"})
	g.Expect(code).To(Equal(0), errOut.String())

	secret := func(ns, name, password string) {
		config := `{"auths":{"` + reg.Host + `":{"username":"robot","password":"` + password + `"}}}`
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(config)}}
		g.Expect(env.Client.Create(context.Background(), s)).To(Succeed())
	}
	ok := newOCIFixture(t, reg.Host, ">=1.0.0", func(r *gitsyncv1.OCIRepository) {
		secret(r.Namespace, "registry", "s3cret")
		r.Spec.SecretRef = &gitsyncv1.LocalObjectReference{Name: "registry"}
	})
	art := waitOCIRevision(t, ok.ns, "1.0.0")
	ok.waitAppliedAt("web", art.Revision)
	g.Expect(ok.configMap(g, "web").Data["value"]).To(Equal("private"))

	bad := newOCIFixture(t, reg.Host, ">=1.0.0", func(r *gitsyncv1.OCIRepository) {
		secret(r.Namespace, "registry", "wrong-password")
		r.Spec.SecretRef = &gitsyncv1.LocalObjectReference{Name: "registry"}
	})
	msg := bad.waitNotReady("web", gitsyncv1.AuthenticationFailedReason)
	g.Expect(msg).To(ContainSubstring("OCIRepository"))
	g.Expect(msg).NotTo(ContainSubstring("wrong-password"))
}
