package integration

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/source"
	"github.com/gitsync-dev/gitsync/internal/sourceid"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

const (
	gitUser     = "git-user"
	gitPassword = "correct-horse-battery"
)

// newGitRepository creates a GitRepository (and its basic-auth Secret when password is set).
func newGitRepository(t *testing.T, ns, name, url string, ref *gitsyncv1.GitRepositoryRef, password string, mutate ...func(*gitsyncv1.GitRepository)) {
	t.Helper()
	ctx := context.Background()
	obj := &gitsyncv1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: gitsyncv1.GitRepositorySpec{
			URL:      url,
			Ref:      ref,
			Interval: &metav1.Duration{Duration: time.Second},
		},
	}
	if password != "" {
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-auth", Namespace: ns},
			Data:       map[string][]byte{"username": []byte(gitUser), "password": []byte(password)},
		}
		if err := env.Client.Create(ctx, secret); err != nil {
			t.Fatal(err)
		}
		obj.Spec.SecretRef = &gitsyncv1.LocalObjectReference{Name: secret.Name}
	}
	for _, m := range mutate {
		m(obj)
	}
	if err := env.Client.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
}

// waitRevision waits until the GitRepository is Ready at the revision.
func waitRevision(t *testing.T, ns, name, revision string) *gitsyncv1.GitRepository {
	t.Helper()
	var obj *gitsyncv1.GitRepository
	NewWithT(t).Eventually(func(g Gomega) {
		obj = getRepo(g, ns, name)
		g.Expect(obj.Status.Artifact).NotTo(BeNil(), "no artifact; conditions: %v", obj.Status.Conditions)
		g.Expect(obj.Status.Artifact.Revision).To(Equal(revision))
		g.Expect(apimeta.IsStatusConditionTrue(obj.Status.Conditions, gitsyncv1.ReadyCondition)).To(BeTrue())
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
	return obj
}

func TestGitRepositoryFollowsNewCommits(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	srv := gittest.NewServer(t, gittest.Options{Username: gitUser, Password: gitPassword})
	repo := srv.CreateRepo("app")
	first := repo.Commit("main", "first", map[string]string{"cm.yaml": "a: 1\n"})

	newGitRepository(t, ns, "app", srv.HTTPURL("app"), &gitsyncv1.GitRepositoryRef{Branch: "main"}, gitPassword)
	obj := waitRevision(t, ns, "app", "main@sha1:"+first)
	g.Expect(obj.Status.Artifact.Digest).To(MatchRegexp(`^sha256:[0-9a-f]{64}$`))
	g.Expect(obj.Status.ObservedGeneration).To(Equal(obj.Generation))
	g.Expect(apimeta.FindStatusCondition(obj.Status.Conditions, gitsyncv1.ReconcilingCondition)).To(BeNil())

	second := repo.Commit("main", "second", map[string]string{"cm.yaml": "a: 2\n"})
	// The interval is 1s: the new revision must show within a few polls.
	NewWithT(t).Eventually(func(g Gomega) string {
		a := getRepo(g, ns, "app").Status.Artifact
		g.Expect(a).NotTo(BeNil())
		return a.Revision
	}).WithTimeout(5 * time.Second).WithPolling(pollInterval).Should(Equal("main@sha1:" + second))

	// One NewArtifact event per revision.
	NewWithT(t).Eventually(func(g Gomega) {
		var notes []string
		for _, e := range eventsFor(g, ns, "app") {
			if e.Reason == "NewArtifact" {
				notes = append(notes, e.Note)
			}
		}
		g.Expect(notes).To(ConsistOf(ContainSubstring(first), ContainSubstring(second)))
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
}

func TestGitRepositoryRefs(t *testing.T) {
	ns := env.Namespace(t)
	srv := gittest.NewServer(t, gittest.Options{})
	repo := srv.CreateRepo("refs")
	c1 := repo.Commit("main", "one", map[string]string{"f": "1"})
	repo.Tag("v0.9.0", c1, false)
	c2 := repo.Commit("main", "two", map[string]string{"f": "2"})
	repo.Tag("v1.0.0", c2, true)
	c3 := repo.Commit("main", "three", map[string]string{"f": "3"})
	repo.Tag("v1.2.0", c3, false)
	c4 := repo.Commit("main", "four", map[string]string{"f": "4"})
	repo.Tag("v2.0.0", c4, false)
	dev := repo.Commit("develop", "dev", map[string]string{"f": "dev"})

	url := srv.HTTPURL("refs")
	cases := []struct {
		name     string
		ref      *gitsyncv1.GitRepositoryRef
		revision string
	}{
		{"branch", &gitsyncv1.GitRepositoryRef{Branch: "develop"}, "develop@sha1:" + dev},
		{"tag", &gitsyncv1.GitRepositoryRef{Tag: "v1.0.0"}, "v1.0.0@sha1:" + c2},
		{"semver", &gitsyncv1.GitRepositoryRef{SemVer: ">=1.0.0 <2.0.0"}, "v1.2.0@sha1:" + c3},
		{"commit", &gitsyncv1.GitRepositoryRef{Commit: c1}, "sha1:" + c1},
		{"commit-on-branch", &gitsyncv1.GitRepositoryRef{Branch: "main", Commit: c2}, "main@sha1:" + c2},
		{"default-branch", nil, "main@sha1:" + c4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			newGitRepository(t, ns, tc.name, url, tc.ref, "")
			waitRevision(t, ns, tc.name, tc.revision)
		})
	}
}

func TestGitRepositoryNoChangePollFetchesNothing(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	srv := gittest.NewServer(t, gittest.Options{})
	repo := srv.CreateRepo("quiet")
	// Content of its own: commits are reproducible, and a repeated run must not find
	// this commit's checkout already stored.
	sha := repo.Commit("main", "only", map[string]string{"f": ns})
	newGitRepository(t, ns, "quiet", srv.HTTPURL("quiet"), nil, "")
	obj := waitRevision(t, ns, "quiet", "main@sha1:"+sha)

	before := srv.Counts("quiet")
	g.Expect(before.Fetches).To(Equal(1))
	// Several 1s polls: each lists refs, none fetches, none writes the object.
	NewWithT(t).Eventually(func() int { return srv.Counts("quiet").RefListings }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(BeNumerically(">=", before.RefListings+3))
	g.Expect(srv.Counts("quiet").Fetches).To(Equal(before.Fetches))
	g.Expect(getRepo(g, ns, "quiet").ResourceVersion).To(Equal(obj.ResourceVersion))
}

func TestGitRepositoryWrongPassword(t *testing.T) {
	const wrong = "wrong-pw-3f9d2a"
	ns := env.Namespace(t)
	srv := gittest.NewServer(t, gittest.Options{Username: gitUser, Password: gitPassword})
	srv.CreateRepo("locked").Commit("main", "x", map[string]string{"f": "1"})
	newGitRepository(t, ns, "locked", srv.HTTPURL("locked"), nil, wrong)

	NewWithT(t).Eventually(func(g Gomega) {
		obj := getRepo(g, ns, "locked")
		ready := readyCondition(obj)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(gitsyncv1.AuthenticationFailedReason))
		g.Expect(obj.Status.Artifact).To(BeNil())
		events := eventsFor(g, ns, "locked")
		g.Expect(events).NotTo(BeEmpty())
		for _, e := range events {
			g.Expect(e.Note).NotTo(ContainSubstring(wrong))
		}
		for _, c := range obj.Status.Conditions {
			g.Expect(c.Message).NotTo(ContainSubstring(wrong))
		}
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
}

func TestGitRepositoryServerDownKeepsArtifact(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	srv := gittest.NewServer(t, gittest.Options{})
	sha := srv.CreateRepo("flaky").Commit("main", "x", map[string]string{"f": "1"})
	newGitRepository(t, ns, "flaky", srv.HTTPURL("flaky"), nil, "")
	good := waitRevision(t, ns, "flaky", "main@sha1:"+sha).Status.Artifact

	srv.Stop()
	NewWithT(t).Eventually(func(g Gomega) {
		obj := getRepo(g, ns, "flaky")
		g.Expect(readyCondition(obj).Status).To(Equal(metav1.ConditionFalse))
		g.Expect(readyCondition(obj).Reason).To(Equal(gitsyncv1.FetchFailedReason))
		g.Expect(obj.Status.Artifact).To(Equal(good))
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
	g.Expect(filepath.Join(storagePath, "checkouts", source.DirName(source.RepositoryKey(srv.HTTPURL("flaky"), ""), sha, nil), "f")).To(BeAnExistingFile())

	srv.Start()
	waitRevision(t, ns, "flaky", "main@sha1:"+sha)
}

func TestGitRepositoryRefNotFoundStalls(t *testing.T) {
	ns := env.Namespace(t)
	srv := gittest.NewServer(t, gittest.Options{})
	srv.CreateRepo("norefs").Commit("main", "x", map[string]string{"f": "1"})
	newGitRepository(t, ns, "missing", srv.HTTPURL("norefs"), &gitsyncv1.GitRepositoryRef{Branch: "no-such-branch"}, "")

	NewWithT(t).Eventually(func(g Gomega) {
		obj := getRepo(g, ns, "missing")
		stalled := apimeta.FindStatusCondition(obj.Status.Conditions, gitsyncv1.StalledCondition)
		g.Expect(stalled).NotTo(BeNil())
		g.Expect(stalled.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(stalled.Reason).To(Equal(gitsyncv1.RefNotFoundReason))
		g.Expect(stalled.Message).To(ContainSubstring("no-such-branch"))
		g.Expect(readyCondition(obj).Reason).To(Equal(gitsyncv1.RefNotFoundReason))
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
}

func TestGitRepositorySSHKnownHosts(t *testing.T) {
	ns := env.Namespace(t)
	srv := gittest.NewServer(t, gittest.Options{})
	sha := srv.CreateRepo("ssh").Commit("main", "x", map[string]string{"f": "1"})

	// A known_hosts line for this server's address but another server's key.
	other := gittest.NewServer(t, gittest.Options{})
	hostPort := strings.Fields(string(srv.KnownHosts()))[0]
	otherKey := strings.SplitN(strings.TrimSpace(string(other.KnownHosts())), " ", 2)[1]
	wrongKnownHosts := hostPort + " " + otherKey + "\n"

	for name, knownHosts := range map[string]string{"right": string(srv.KnownHosts()), "wrong": wrongKnownHosts} {
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Data:       map[string][]byte{"identity": srv.ClientIdentity(), "known_hosts": []byte(knownHosts)},
		}
		if err := env.Client.Create(context.Background(), secret); err != nil {
			t.Fatal(err)
		}
		newGitRepository(t, ns, name, srv.SSHURL("ssh"), nil, "", func(r *gitsyncv1.GitRepository) {
			r.Spec.SecretRef = &gitsyncv1.LocalObjectReference{Name: name}
		})
	}

	waitRevision(t, ns, "right", "main@sha1:"+sha)
	NewWithT(t).Eventually(func(g Gomega) {
		obj := getRepo(g, ns, "wrong")
		g.Expect(readyCondition(obj)).NotTo(BeNil())
		g.Expect(readyCondition(obj).Reason).To(Equal(gitsyncv1.AuthenticationFailedReason))
		g.Expect(obj.Status.Artifact).To(BeNil())
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
}

func TestGitRepositoryIgnore(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	srv := gittest.NewServer(t, gittest.Options{})
	sha := srv.CreateRepo("docs").Commit("main", "x", map[string]string{
		"README.md":       "# docs of " + ns + "\n",
		"deploy/app.yaml": "kind: ConfigMap\n",
		"secret/key.txt":  "k\n",
	})
	ignore := "# docs are not deployed\n*.md\n/secret/\n"
	newGitRepository(t, ns, "all", srv.HTTPURL("docs"), nil, "")
	newGitRepository(t, ns, "filtered", srv.HTTPURL("docs"), nil, "", func(r *gitsyncv1.GitRepository) {
		r.Spec.Ignore = ignore
	})
	all := waitRevision(t, ns, "all", "main@sha1:"+sha).Status.Artifact
	filtered := waitRevision(t, ns, "filtered", "main@sha1:"+sha).Status.Artifact
	g.Expect(filtered.Digest).NotTo(Equal(all.Digest))

	dir := filepath.Join(storagePath, "checkouts", source.DirName(source.RepositoryKey(srv.HTTPURL("docs"), ""), sha, sourceid.IgnoreLines(ignore)))
	g.Expect(filepath.Join(dir, "deploy", "app.yaml")).To(BeAnExistingFile())
	g.Expect(filepath.Join(dir, "README.md")).NotTo(BeAnExistingFile())
	g.Expect(filepath.Join(dir, "secret")).NotTo(BeAnExistingFile())
	full := filepath.Join(storagePath, "checkouts", source.DirName(source.RepositoryKey(srv.HTTPURL("docs"), ""), sha, nil))
	g.Expect(filepath.Join(full, "README.md")).To(BeAnExistingFile())

	// Changing spec.ignore changes the artifact.
	editRepo(g, ns, "filtered", func(r *gitsyncv1.GitRepository) { r.Spec.Ignore = "/secret/\n" })
	NewWithT(t).Eventually(func(g Gomega) string {
		return getRepo(g, ns, "filtered").Status.Artifact.Digest
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).ShouldNot(Equal(filtered.Digest))
}

func TestGitRepositoryRequestedAtAndSuspend(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	srv := gittest.NewServer(t, gittest.Options{})
	repo := srv.CreateRepo("manual")
	first := repo.Commit("main", "1", map[string]string{"f": "1"})
	newGitRepository(t, ns, "manual", srv.HTTPURL("manual"), nil, "", func(r *gitsyncv1.GitRepository) {
		r.Spec.Interval = &metav1.Duration{Duration: time.Hour}
	})
	waitRevision(t, ns, "manual", "main@sha1:"+first)

	// A new commit is not seen before the hour is up, unless asked for.
	second := repo.Commit("main", "2", map[string]string{"f": "2"})
	requestAt := func(value string) {
		editRepo(g, ns, "manual", func(r *gitsyncv1.GitRepository) {
			r.Annotations = map[string]string{gitsyncv1.RequestedAtAnnotation: value}
		})
	}
	requestAt("first-request")
	waitRevision(t, ns, "manual", "main@sha1:"+second)
	NewWithT(t).Eventually(func(g Gomega) string {
		return getRepo(g, ns, "manual").Status.LastHandledReconcileAt
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal("first-request"))

	// Suspended: a request changes nothing.
	editRepo(g, ns, "manual", func(r *gitsyncv1.GitRepository) { r.Spec.Suspend = true })
	repo.Commit("main", "3", map[string]string{"f": "3"})
	requestAt("second-request")
	NewWithT(t).Consistently(func(g Gomega) {
		o := getRepo(g, ns, "manual")
		g.Expect(o.Status.Artifact.Revision).To(Equal("main@sha1:" + second))
		g.Expect(o.Status.LastHandledReconcileAt).To(Equal("first-request"))
	}).WithTimeout(2 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
}

func TestGitRepositoryReactsToSecretChange(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	srv := gittest.NewServer(t, gittest.Options{Username: gitUser, Password: gitPassword})
	repo := srv.CreateRepo("rotated")
	first := repo.Commit("main", "1", map[string]string{"f": "1"})
	newGitRepository(t, ns, "rotated", srv.HTTPURL("rotated"), nil, gitPassword, func(r *gitsyncv1.GitRepository) {
		r.Spec.Interval = &metav1.Duration{Duration: time.Hour}
	})
	waitRevision(t, ns, "rotated", "main@sha1:"+first)

	// With an hour's interval, only the Secret's change can explain a poll now.
	second := repo.Commit("main", "2", map[string]string{"f": "2"})
	secret := &corev1.Secret{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "rotated-auth"}, secret)).To(Succeed())
	secret.Data["rotatedAt"] = []byte("now")
	g.Expect(env.Client.Update(context.Background(), secret)).To(Succeed())
	waitRevision(t, ns, "rotated", "main@sha1:"+second)
}
