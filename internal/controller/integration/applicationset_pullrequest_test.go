package integration

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/appset"
	"github.com/gitsync-dev/gitsync/internal/controller/applicationset"
	"github.com/gitsync-dev/gitsync/internal/controller/sources"
	"github.com/gitsync-dev/gitsync/internal/egress"
	"github.com/gitsync-dev/gitsync/internal/testutil/forgetest"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

// An ApplicationSet with a pullRequest generator makes one Application per open pull
// request that carries the generator's labels (not the unlabelled one, not the fork's);
// each syncs its own environment from a real Git server. A pull request closed on the
// forge deletes exactly its Application at the next listing (the set's interval), and
// that Application's prune removes its objects; a pull request opened later is added.
func TestApplicationSetPullRequestGenerator(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	f := &appFixture{t: t, ns: ns, srv: gittest.NewServer(t, gittest.Options{})}
	f.repo = f.srv.CreateRepo("acme/app")
	f.repo.Commit("main", "initial", map[string]string{
		"deploy/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: preview-${PR}\ndata:\n  sha: 'commit-${SHA}'\n  branch: '${BRANCH}'\n",
	})
	newGitRepository(t, ns, "repo", f.srv.HTTPURL("acme/app"), nil, "")

	forge := forgetest.New(t, forgetest.GitHub, "forge-token")
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "forge", Namespace: ns},
		Data: map[string][]byte{"token": []byte("forge-token")}})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &gitsyncv1.Provider{ObjectMeta: metav1.ObjectMeta{Name: "forge", Namespace: ns},
		Spec: gitsyncv1.ProviderSpec{Type: gitsyncv1.ProviderGitHub, Address: forge.URL,
			SecretRef: &gitsyncv1.LocalObjectReference{Name: "forge"}}})).To(Succeed())
	for _, pr := range []forgetest.PullRequest{
		{Repo: "acme/app", Number: 1, Branch: "feature/Login", SHA: "1111111111aaaaaaaaaa1111111111aaaaaaaaaa", TargetBranch: "main", Labels: []string{"preview"}},
		{Repo: "acme/app", Number: 2, Branch: "fix_typo", SHA: "2222222222bbbbbbbbbb2222222222bbbbbbbbbb", TargetBranch: "main", Labels: []string{"team-a", "preview"}},
		{Repo: "acme/app", Number: 3, Branch: "wip", SHA: "3333333333cccccccccc3333333333cccccccccc", TargetBranch: "main"},
		{Repo: "acme/app", Number: 4, Branch: "main", SHA: "4444444444dddddddddd4444444444dddddddddd", TargetBranch: "main",
			Labels: []string{"preview"}, ForkRepo: "mallory/app"},
		{Repo: "acme/other", Number: 5, Branch: "elsewhere", SHA: "5555555555eeeeeeeeee5555555555eeeeeeeeee", TargetBranch: "main", Labels: []string{"preview"}},
	} {
		forge.AddPullRequest(pr)
	}

	set := &gitsyncv1.ApplicationSet{
		ObjectMeta: metav1.ObjectMeta{Name: "previews", Namespace: ns},
		Spec: gitsyncv1.ApplicationSetSpec{
			Interval: &metav1.Duration{Duration: time.Second},
			Generators: []gitsyncv1.ApplicationSetGenerator{{ApplicationSetBaseGenerator: gitsyncv1.ApplicationSetBaseGenerator{
				PullRequest: &gitsyncv1.PullRequestGenerator{ProviderRef: gitsyncv1.LocalObjectReference{Name: "forge"},
					Repository: "acme/app", Labels: []string{"preview"}}}}},
			Template: gitsyncv1.ApplicationSetTemplate{
				Metadata: gitsyncv1.ApplicationSetTemplateMeta{Name: "pr-{{ .number }}-{{ .branch_slug }}",
					Labels: map[string]string{"pull-request": "{{ .number }}", "target": "{{ .target_branch }}"}},
				Spec: gitsyncv1.ApplicationSpec{
					SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "repo"},
					Path:      "deploy", TargetNamespace: ns, Prune: true,
					PostBuild: &gitsyncv1.PostBuild{Substitute: map[string]string{
						"PR": "{{ .number }}", "SHA": "{{ .head_short_sha }}", "BRANCH": "{{ .branch }}"}},
				},
			},
		},
	}
	g.Expect(env.Client.Create(ctx, set)).To(Succeed())

	g.Eventually(func(g Gomega) []string { return keysOf(generatedApps(g, ns, "previews")) }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal([]string{"pr-1-feature-login", "pr-2-fix-typo"}))
	apps := generatedApps(g, ns, "previews")
	g.Expect(apps["pr-2-fix-typo"].Labels).To(HaveKeyWithValue("pull-request", "2"))
	g.Expect(apps["pr-2-fix-typo"].Labels).To(HaveKeyWithValue("target", "main"))
	g.Eventually(func(g Gomega) map[string]string { return f.configMap(g, "preview-1").Data }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal(map[string]string{"sha": "commit-11111111", "branch": "feature/Login"}))
	g.Eventually(func(g Gomega) map[string]string { return f.configMap(g, "preview-2").Data }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal(map[string]string{"sha": "commit-22222222", "branch": "fix_typo"}))
	g.Eventually(func(g Gomega) metav1.ConditionStatus {
		ready := apimeta.FindStatusCondition(getSet(g, ns, "previews").Status.Conditions, gitsyncv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		return ready.Status
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal(metav1.ConditionTrue))

	// Closing #1 deletes exactly its Application (and its prune its ConfigMap), at the next
	// listing: nothing but the set's interval wakes the set here.
	forge.ClosePullRequest("acme/app", 1)
	g.Eventually(func(g Gomega) []string { return keysOf(generatedApps(g, ns, "previews")) }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal([]string{"pr-2-fix-typo"}))
	g.Expect(generatedApps(g, ns, "previews")["pr-2-fix-typo"].UID).To(Equal(apps["pr-2-fix-typo"].UID), "the other Application is not recreated")
	g.Eventually(func(g Gomega) bool { return f.exists(g, &corev1.ConfigMap{}, "preview-1") }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(BeFalse())
	g.Expect(f.configMap(g, "preview-2").Data).To(HaveKeyWithValue("sha", "commit-22222222"))

	// A pull request opened later, with the label, is added.
	forge.AddPullRequest(forgetest.PullRequest{Repo: "acme/app", Number: 6, Branch: "Feature/Search", SHA: "6666666666ffffffffff6666666666ffffffffff",
		TargetBranch: "main", Labels: []string{"preview"}})
	g.Eventually(func(g Gomega) []string { return keysOf(generatedApps(g, ns, "previews")) }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal([]string{"pr-2-fix-typo", "pr-6-feature-search"}))
	g.Eventually(func(g Gomega) string { return f.configMap(g, "preview-6").Data["sha"] }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal("commit-66666666"))
}

// A pullRequest generator whose Provider is missing, or is not a forge, fails the set
// with the reason and deletes nothing it generated before.
func TestApplicationSetPullRequestProviderRefused(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	g.Expect(env.Client.Create(ctx, &gitsyncv1.Provider{ObjectMeta: metav1.ObjectMeta{Name: "chat", Namespace: ns},
		Spec: gitsyncv1.ProviderSpec{Type: gitsyncv1.ProviderGeneric, Address: "http://127.0.0.1:1/hook"}})).To(Succeed())
	for name, provider := range map[string]string{"absent": "nowhere", "not-a-forge": "chat"} {
		set := &gitsyncv1.ApplicationSet{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: gitsyncv1.ApplicationSetSpec{
				Generators: []gitsyncv1.ApplicationSetGenerator{{ApplicationSetBaseGenerator: gitsyncv1.ApplicationSetBaseGenerator{
					PullRequest: &gitsyncv1.PullRequestGenerator{ProviderRef: gitsyncv1.LocalObjectReference{Name: provider}, Repository: "acme/app"}}}},
				Template: gitsyncv1.ApplicationSetTemplate{
					Metadata: gitsyncv1.ApplicationSetTemplateMeta{Name: "pr-{{ .number }}"},
					Spec:     gitsyncv1.ApplicationSpec{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "repo"}},
				},
			},
		}
		g.Expect(env.Client.Create(ctx, set)).To(Succeed())
	}
	for name, want := range map[string]string{"absent": "reading Provider nowhere", "not-a-forge": "not github, gitlab or gitea"} {
		g.Eventually(func(g Gomega) string {
			ready := apimeta.FindStatusCondition(getSet(g, ns, name).Status.Conditions, gitsyncv1.ReadyCondition)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Reason).To(Equal(gitsyncv1.GenerateFailedReason))
			return ready.Message
		}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(ContainSubstring(want))
	}
}

// prForge starts a forge emulator of kind with a Provider "forge" (and its Secret
// "forge-token") in ns.
func prForge(t *testing.T, g Gomega, ns, kind string) *forgetest.Server {
	t.Helper()
	ctx := context.Background()
	srv := forgetest.New(t, kind, "forge-token")
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "forge-token", Namespace: ns},
		Data: map[string][]byte{"token": []byte("forge-token")}})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &gitsyncv1.Provider{ObjectMeta: metav1.ObjectMeta{Name: "forge", Namespace: ns},
		Spec: gitsyncv1.ProviderSpec{Type: kind, Address: srv.URL, SecretRef: &gitsyncv1.LocalObjectReference{Name: "forge-token"}}})).To(Succeed())
	return srv
}

func prSet(ns string, labels ...string) *gitsyncv1.ApplicationSet {
	set := &gitsyncv1.ApplicationSet{ObjectMeta: metav1.ObjectMeta{Name: "previews", Namespace: ns}}
	set.Spec.Generators = []gitsyncv1.ApplicationSetGenerator{{ApplicationSetBaseGenerator: gitsyncv1.ApplicationSetBaseGenerator{
		PullRequest: &gitsyncv1.PullRequestGenerator{ProviderRef: gitsyncv1.LocalObjectReference{Name: "forge"},
			Repository: "acme/app", Labels: labels}}}}
	return set
}

// The lister speaks to GitLab and Gitea as to GitHub: the label filter selects, a fork
// is left out.
func TestApplicationSetPullRequestForges(t *testing.T) {
	for _, kind := range []string{forgetest.GitLab, forgetest.Gitea} {
		t.Run(kind, func(t *testing.T) {
			g := NewWithT(t)
			ns := env.Namespace(t)
			srv := prForge(t, g, ns, kind)
			srv.AddPullRequest(forgetest.PullRequest{Repo: "acme/app", Number: 7, Branch: "feat/A", SHA: "77777777aaaa", TargetBranch: "main", Labels: []string{"preview", "x"}})
			srv.AddPullRequest(forgetest.PullRequest{Repo: "acme/app", Number: 8, Branch: "feat/b", SHA: "88888888bbbb", TargetBranch: "main"})
			srv.AddPullRequest(forgetest.PullRequest{Repo: "acme/app", Number: 9, Branch: "main", SHA: "99999999cccc", TargetBranch: "main",
				Labels: []string{"preview"}, ForkRepo: "mallory/app"})
			lister := &applicationset.PullRequestLister{Client: env.Client, Secrets: env.Client}
			set := prSet(ns, "preview")
			sets, err := lister.List(context.Background(), set, set.Spec.Generators[0].PullRequest)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(sets).To(HaveLen(1))
			g.Expect(appset.Flatten(sets[0])).To(Equal([]string{"branch=feat/A", "branch_slug=feat-a", "head_sha=77777777aaaa",
				"head_short_sha=77777777", "labels.0=preview", "labels.1=x", "number=7", "target_branch=main"}))
			all := prSet(ns)
			sets, err = lister.List(context.Background(), all, all.Spec.Generators[0].PullRequest)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(sets).To(HaveLen(2), "without labels: every open pull request but the fork's")
		})
	}
}

// Tenant mode: a tenant who may create Providers and ApplicationSets but not read the
// namespace's Secrets names one as a Provider's secretRef: the lister asks first whether
// the namespace's tenant account may get it and calls the forge not at all when it may
// not. An egress guard refuses a forge at a denied address before any request.
func TestApplicationSetPullRequestRefusals(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	srv := prForge(t, g, ns, forgetest.GitHub)
	srv.AddPullRequest(forgetest.PullRequest{Repo: "acme/app", Number: 1, Branch: "a", SHA: "1111111111", TargetBranch: "main"})
	set := prSet(ns)
	gen := set.Spec.Generators[0].PullRequest

	tenant := &applicationset.PullRequestLister{Client: env.Client, Secrets: env.Client,
		SecretAccess: sources.NewSecretAccess(env.Client, "gitsync-tenant", true)}
	_, err := tenant.List(ctx, set, gen)
	g.Expect(errors.Is(err, sources.ErrSecretAccessDenied)).To(BeTrue(), "%v", err)
	g.Expect(srv.Calls()).To(BeEmpty())

	guarded := &applicationset.PullRequestLister{Client: env.Client, Secrets: env.Client,
		Egress: egress.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")})}
	_, err = guarded.List(ctx, set, gen)
	g.Expect(errors.Is(err, egress.ErrDenied)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).NotTo(ContainSubstring("forge-token"))
	g.Expect(srv.Calls()).To(BeEmpty())

	// The namespace's admin grants the tenant that Secret: the forge is asked.
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "forge-token"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}, ResourceNames: []string{"forge-token"}}}}
	g.Expect(env.Client.Create(ctx, role)).To(Succeed())
	g.Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "forge-token"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "gitsync-tenant"}}})).To(Succeed())
	sets, err := tenant.List(ctx, set, gen)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sets).To(HaveLen(1))
	g.Expect(srv.Calls()).To(HaveLen(1))
}

// The list is kept for the set's interval: the generated Applications syncing (each of
// their status changes wakes the set) does not call the forge again; the set's
// requested-at annotation does, and a pull request closed meanwhile then goes.
func TestApplicationSetPullRequestListedOncePerInterval(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	f := &appFixture{t: t, ns: ns, srv: gittest.NewServer(t, gittest.Options{})}
	f.repo = f.srv.CreateRepo("acme/app")
	sha := f.repo.Commit("main", "initial", map[string]string{
		"deploy/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: preview-${PR}\ndata:\n  v: 'x'\n",
	})
	newGitRepository(t, ns, "repo", f.srv.HTTPURL("acme/app"), nil, "")
	srv := prForge(t, g, ns, forgetest.GitHub)
	srv.AddPullRequest(forgetest.PullRequest{Repo: "acme/app", Number: 1, Branch: "a", SHA: "1111111111", TargetBranch: "main"})
	srv.AddPullRequest(forgetest.PullRequest{Repo: "acme/app", Number: 2, Branch: "b", SHA: "2222222222", TargetBranch: "main"})
	set := prSet(ns)
	set.Spec.Interval = &metav1.Duration{Duration: time.Hour}
	set.Spec.Template = gitsyncv1.ApplicationSetTemplate{
		Metadata: gitsyncv1.ApplicationSetTemplateMeta{Name: "pr-{{ .number }}"},
		Spec: gitsyncv1.ApplicationSpec{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "repo"},
			Path: "deploy", TargetNamespace: ns, Prune: true,
			PostBuild: &gitsyncv1.PostBuild{Substitute: map[string]string{"PR": "{{ .number }}"}}},
	}
	g.Expect(env.Client.Create(ctx, set)).To(Succeed())
	f.waitApplied("pr-1", sha)
	f.waitApplied("pr-2", sha)
	g.Expect(srv.Calls()).To(HaveLen(1), "one listing for the set's interval")

	srv.ClosePullRequest("acme/app", 1)
	s := getSet(g, ns, "previews")
	base := client.MergeFrom(s.DeepCopy())
	s.Annotations = map[string]string{gitsyncv1.RequestedAtAnnotation: "now"}
	g.Expect(env.Client.Patch(ctx, s, base)).To(Succeed())
	g.Eventually(func(g Gomega) []string { return keysOf(generatedApps(g, ns, "previews")) }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal([]string{"pr-2"}))
	g.Expect(srv.Calls()).To(HaveLen(2))
}
