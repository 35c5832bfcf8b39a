package integration

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

// An object that leaves one Application's Git is not deleted while another Application
// of the namespace renders it, whatever its source (here: another repository, and an
// Application that has not applied yet), nor while another Application of the namespace
// cannot be rendered at all (it may render the object): the prune fails closed, and
// says so (Ready=False/PruneSkipped, the object kept in the inventory).
func TestPruneConsidersEveryApplicationOfTheNamespace(t *testing.T) {
	for _, c := range []struct {
		name  string
		other map[string]string // the other Application's repository
		held  bool              // x's prune is held back (not handed off)
	}{
		{"another source renders it", map[string]string{"pvc.yaml": pvcYAML("data"), "y.yaml": configMapYAML("y", "1")}, false},
		{"another Application cannot render", map[string]string{"broken.yaml": "kind: [unclosed\n"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			f, sha := newAppFixture(t, map[string]string{"pvc.yaml": pvcYAML("data"), "x.yaml": configMapYAML("x", "1")})
			f.app("x", func(a *gitsyncv1.Application) { a.Spec.Prune = true })
			f.waitApplied("x", sha)

			srv := gittest.NewServer(t, gittest.Options{})
			srv.CreateRepo("other").Commit("main", "other", c.other)
			newGitRepository(t, f.ns, "other", srv.HTTPURL("other"), nil, "")
			f.app("y", func(a *gitsyncv1.Application) {
				a.Spec.SourceRef.Name = "other"
				a.Spec.AutoSync = ptr.To(false) // it renders the object, but has not applied it
			})
			g.Eventually(func(g Gomega) bool { return getRepo(g, f.ns, "other").Status.Artifact != nil }).
				WithTimeout(waitTimeout).WithPolling(pollInterval).Should(BeTrue())

			sha = f.repo.Commit("main", "the PVC leaves x", map[string]string{"x.yaml": configMapYAML("x", "1")}, "pvc.yaml")
			if c.held {
				f.waitAppliedKeeping("x", sha)
			} else {
				f.waitApplied("x", sha)
			}
			g.Consistently(func(g Gomega) bool {
				pvc := &corev1.PersistentVolumeClaim{}
				return f.exists(g, pvc, "data") && pvc.DeletionTimestamp == nil
			}, 2*time.Second, 200*time.Millisecond).Should(BeTrue(), "the PVC (and its data) was deleted")
		})
	}
}

// spec.serviceAccountName is a service account's name and nothing else: the API server
// refuses a name that would make the impersonated user something else.
func TestServiceAccountNameIsValidated(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	for _, name := range []string{"default:x", "system:serviceaccount:kube-system:admin", "../admin", "Admin", ""} {
		app := &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{GenerateName: "sa-", Namespace: ns},
			Spec: gitsyncv1.ApplicationSpec{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "repo"},
				ServiceAccountName: name}}
		err := env.Client.Create(context.Background(), app)
		if name == "" {
			g.Expect(err).NotTo(HaveOccurred(), "empty: the default")
			continue
		}
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%q: %v", name, err)
	}
}
