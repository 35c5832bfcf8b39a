package sourceid

import (
	"context"
	"errors"
	"os"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/chartrepo"
	"github.com/gitsync-dev/gitsync/internal/testutil/chartserver"
	"github.com/gitsync-dev/gitsync/internal/testutil/testenv"
)

// env is an API server the HelmRepositories are read from.
var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env, nil)) }

// chartApp is an Application of chart (version range version) from HelmRepository
// "charts" in ns.
func chartApp(ns, chart, version string) *gitsyncv1.Application {
	return &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: gitsyncv1.ApplicationSpec{
		SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.HelmRepositoryKind, Name: "charts"},
		Helm:      &gitsyncv1.HelmSpec{Chart: chart, Version: version},
	}}
}

// creds is the Secret "creds" of a HelmRepository served with the certificate ca.
func creds(ns string, ca []byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: ns}, Data: map[string][]byte{"ca.crt": ca}}
}

// The one resolver reads the repository, asks the index for its digest and picks the
// version; each way it fails is told apart.
func TestResolveChart(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	srv := chartserver.NewRepo(t)
	srv.Add("web", "1.0.0", chartserver.Package(t, "web", chartserver.ConfigMapChart("web", "1.0.0")))
	srv.Add("web", "1.1.0", chartserver.Package(t, "web", chartserver.ConfigMapChart("web", "1.1.0")))
	store, err := chartrepo.New(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	var digest string
	index := func(ctx context.Context, repo *gitsyncv1.HelmRepository, chart string) (string, error) {
		if digest == "" {
			return "", ErrNoIndex
		}
		return digest, nil
	}

	_, err = ResolveChart(ctx, env.Client, store, chartApp(ns, "web", ""), index)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no HelmRepository: %v", err)

	g.Expect(env.Client.Create(ctx, creds(ns, srv.CA))).To(Succeed())
	repo := &gitsyncv1.HelmRepository{ObjectMeta: metav1.ObjectMeta{Name: "charts", Namespace: ns},
		Spec: gitsyncv1.HelmRepositorySpec{URL: srv.URL, SecretRef: &gitsyncv1.LocalObjectReference{Name: "creds"}}}
	g.Expect(env.Client.Create(ctx, repo)).To(Succeed())

	chart, err := ResolveChart(ctx, env.Client, store, chartApp(ns, "", ""), index)
	g.Expect(err).To(MatchError(ErrNoChart))
	g.Expect(chart.Repo.Name).To(Equal("charts"))

	_, err = ResolveChart(ctx, env.Client, store, chartApp(ns, "web", ""), index)
	g.Expect(err).To(MatchError(ErrNoIndex))

	digest, _, err = ReadIndex(ctx, store, env.Client, repo, "web")
	g.Expect(err).NotTo(HaveOccurred())
	chart, err = ResolveChart(ctx, env.Client, store, chartApp(ns, "web", ""), index)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(chart.Revision).To(Equal("web@1.1.0"))
	chart, err = ResolveChart(ctx, env.Client, store, chartApp(ns, "web", "~1.0"), index)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(chart.Revision).To(Equal("web@1.0.0"))
	g.Expect(chart.Version.Version).To(Equal("1.0.0"))

	for _, app := range []*gitsyncv1.Application{chartApp(ns, "api", ""), chartApp(ns, "web", "2.x")} {
		_, err = ResolveChart(ctx, env.Client, store, app, index)
		var notFound *NotFoundError
		g.Expect(errors.As(err, &notFound)).To(BeTrue(), "%v", err)
		g.Expect(notFound.Unlisted).To(BeFalse(), "an HTTP index lists every chart")
		g.Expect(err.Error()).To(HavePrefix("HelmRepository " + ns + "/charts: "))
	}
}

// LocateChart resolves as a sync would, with a fresh read of the index, and downloads.
func TestLocateChart(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	srv := chartserver.NewRepo(t)
	srv.Add("web", "1.0.0", chartserver.Package(t, "web", chartserver.ConfigMapChart("web", "1.0.0")))
	g.Expect(env.Client.Create(ctx, creds(ns, srv.CA))).To(Succeed())
	repo := &gitsyncv1.HelmRepository{ObjectMeta: metav1.ObjectMeta{Name: "charts", Namespace: ns},
		Spec: gitsyncv1.HelmRepositorySpec{URL: srv.URL, SecretRef: &gitsyncv1.LocalObjectReference{Name: "creds"}}}
	g.Expect(env.Client.Create(ctx, repo)).To(Succeed())
	store, err := chartrepo.New(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())

	path, revision, err := LocateChart(ctx, env.Client, chartApp(ns, "web", ""), store)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(revision).To(Equal("web@1.0.0"))
	g.Expect(path).To(BeAnExistingFile())
	cached, ok := store.Cached(ChartKey(repo), "web", "1.0.0")
	g.Expect(ok).To(BeTrue())
	g.Expect(cached).To(Equal(path))

	_, _, err = LocateChart(ctx, env.Client, chartApp(ns, "web", "9.x"), store)
	g.Expect(err).To(MatchError(HavePrefix("HelmRepository " + ns + "/charts: no version of chart")))
	_, _, err = LocateChart(ctx, env.Client, chartApp(ns, "", ""), store)
	g.Expect(err).To(MatchError("spec.helm.chart is required with a HelmRepository source"))
}
