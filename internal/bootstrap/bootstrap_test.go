package bootstrap

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/install"
	"github.com/gitsync-dev/gitsync/internal/source"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
	"github.com/gitsync-dev/gitsync/internal/testutil/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, &env, nil))
}

// fileAt reads a file of the branch's head commit in a bare repository.
func fileAt(g Gomega, repo *gittest.Repo, branch, name string) (string, bool) {
	r, err := git.PlainOpen(repo.Path())
	g.Expect(err).NotTo(HaveOccurred())
	ref, err := r.Reference(plumbing.NewBranchReferenceName(branch), true)
	g.Expect(err).NotTo(HaveOccurred())
	commit, err := r.CommitObject(ref.Hash())
	g.Expect(err).NotTo(HaveOccurred())
	f, err := commit.File(name)
	if err != nil {
		return "", false
	}
	content, err := f.Contents()
	g.Expect(err).NotTo(HaveOccurred())
	return content, true
}

// A bootstrap against a Git server with basic auth commits the manifests next to what
// the branch held, installs gitsync and applies the sync objects; a second run changes
// nothing, in Git or in the cluster.
func TestBootstrapTwice(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := gittest.NewServer(t, gittest.Options{Username: "fleet-bot", Password: "pa55-w0rd"})
	repo := srv.CreateRepo("fleet")
	repo.Commit("main", "init", map[string]string{"README.md": "fleet\n"})

	var out bytes.Buffer
	opts := Options{
		URL: srv.HTTPURL("fleet"), Branch: "main", Path: "./clusters/dev/",
		Auth:     &source.Auth{Username: "fleet-bot", Password: "pa55-w0rd"},
		Interval: 2 * time.Minute, Out: &out,
	}
	res, err := Run(ctx, env.Client, opts)
	g.Expect(err).NotTo(HaveOccurred(), out.String())
	g.Expect(res.Commit).To(Equal(repo.Head("main")))
	g.Expect(res.Unchanged()).To(BeFalse())
	g.Expect(res.Files).To(Equal([]string{"clusters/dev/gitsync-system/gitsync.yaml", "clusters/dev/gitsync-system/sync.yaml"}))
	g.Expect(out.String()).To(ContainSubstring("✔ committed " + res.Commit[:12] + " to main"))
	g.Expect(out.String()).NotTo(ContainSubstring("pa55-w0rd"))

	// The tree: what was there, the manifests as `gitsync install --export
	// --least-privilege=false` prints them (the sync Application writes gitsync's install),
	// the sync objects.
	objs, err := install.ManifestsWith("", false)
	g.Expect(err).NotTo(HaveOccurred())
	exported, err := install.ExportBytes(objs)
	g.Expect(err).NotTo(HaveOccurred())
	readme, ok := fileAt(g, repo, "main", "README.md")
	g.Expect(ok).To(BeTrue())
	g.Expect(readme).To(Equal("fleet\n"))
	manifests, ok := fileAt(g, repo, "main", res.Files[0])
	g.Expect(ok).To(BeTrue())
	g.Expect(manifests).To(Equal(string(exported)))
	syncYAML, ok := fileAt(g, repo, "main", res.Files[1])
	g.Expect(ok).To(BeTrue())
	g.Expect(syncYAML).To(ContainSubstring("kind: GitRepository"))
	g.Expect(syncYAML).To(ContainSubstring("kind: Application"))
	g.Expect(syncYAML).NotTo(ContainSubstring("pa55-w0rd"))
	r, err := git.PlainOpen(repo.Path())
	g.Expect(err).NotTo(HaveOccurred())
	commit, err := r.CommitObject(plumbing.NewHash(res.Commit))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(commit.Author.Name).To(Equal("gitsync"))
	g.Expect(commit.Message).To(HavePrefix("Bootstrap gitsync in clusters/dev\n"))

	// The cluster: gitsync installed, the Secret, the GitRepository and the Application.
	d := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: "gitsync-system", Name: "gitsync"}, d)).To(Succeed())
	secret := &corev1.Secret{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: "gitsync-system", Name: AuthSecretName}, secret)).To(Succeed())
	g.Expect(string(secret.Data["username"])).To(Equal("fleet-bot"))
	g.Expect(string(secret.Data["password"])).To(Equal("pa55-w0rd"))
	gitRepo := &gitsyncv1.GitRepository{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: "gitsync-system", Name: Name}, gitRepo)).To(Succeed())
	g.Expect(gitRepo.Spec.URL).To(Equal(srv.HTTPURL("fleet")))
	g.Expect(gitRepo.Spec.Ref.Branch).To(Equal("main"))
	g.Expect(gitRepo.Spec.Interval.Duration).To(Equal(2 * time.Minute))
	g.Expect(gitRepo.Spec.SecretRef.Name).To(Equal(AuthSecretName))
	app := &gitsyncv1.Application{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: "gitsync-system", Name: Name}, app)).To(Succeed())
	g.Expect(app.Spec.SourceRef.Name).To(Equal(Name))
	g.Expect(app.Spec.Path).To(Equal("clusters/dev"))
	g.Expect(app.Spec.Prune).To(BeTrue())
	g.Expect(app.Spec.ServiceAccountName).To(Equal(d.Spec.Template.Spec.ServiceAccountName))

	// Again: no commit, nothing changed in the cluster.
	versions := resourceVersions(g, append(objs, syncObjects(opts, "clusters/dev", manager{namespace: "gitsync-system", serviceAccount: "gitsync"})...))
	out.Reset()
	res, err = Run(ctx, env.Client, opts)
	g.Expect(err).NotTo(HaveOccurred(), out.String())
	g.Expect(res.Commit).To(BeEmpty())
	g.Expect(res.Unchanged()).To(BeTrue(), out.String())
	g.Expect(repo.Head("main")).To(Equal(commit.Hash.String()))
	g.Expect(out.String()).To(ContainSubstring("✔ clusters/dev/gitsync-system unchanged on main"))
	g.Expect(out.String()).To(ContainSubstring("✔ cluster unchanged"))
	g.Expect(resourceVersions(g, append(objs, syncObjects(opts, "clusters/dev", manager{namespace: "gitsync-system", serviceAccount: "gitsync"})...))).To(Equal(versions))
}

// resourceVersions reads the resourceVersion of each object.
func resourceVersions(g Gomega, objs []*unstructured.Unstructured) map[string]string {
	out := map[string]string{}
	for _, obj := range objs {
		live := obj.DeepCopy()
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), live)).To(Succeed())
		out[install.Subject(live)] = live.GetResourceVersion()
	}
	return out
}

// An empty repository gets its first commit on the new branch, anonymously.
func TestBootstrapEmptyRepository(t *testing.T) {
	g := NewWithT(t)
	srv := gittest.NewServer(t, gittest.Options{})
	repo := srv.CreateRepo("empty")
	var out bytes.Buffer
	res, err := Run(context.Background(), env.Client, Options{URL: srv.HTTPURL("empty"), Branch: "fleet", Path: "clusters/prod", Out: &out})
	g.Expect(err).NotTo(HaveOccurred(), out.String())
	g.Expect(res.Commit).To(Equal(repo.Head("fleet")))
	_, ok := fileAt(g, repo, "fleet", "clusters/prod/gitsync-system/sync.yaml")
	g.Expect(ok).To(BeTrue())
	syncYAML, _ := fileAt(g, repo, "fleet", "clusters/prod/gitsync-system/sync.yaml")
	g.Expect(syncYAML).NotTo(ContainSubstring("secretRef"))
}

// Over SSH, with a key and the host's known_hosts, as a GitRepository's Secret has them.
func TestBootstrapOverSSH(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := gittest.NewServer(t, gittest.Options{})
	repo := srv.CreateRepo("ssh")
	auth := &source.Auth{Identity: srv.ClientIdentity(), KnownHosts: srv.KnownHosts()}
	var out bytes.Buffer
	res, err := Run(ctx, env.Client, Options{URL: srv.SSHURL("ssh"), Branch: "main", Path: "clusters/edge", Auth: auth, Out: &out})
	g.Expect(err).NotTo(HaveOccurred(), out.String())
	g.Expect(res.Commit).To(Equal(repo.Head("main")))
	secret := &corev1.Secret{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: "gitsync-system", Name: AuthSecretName}, secret)).To(Succeed())
	g.Expect(secret.Data).To(HaveKey("identity"))
	g.Expect(secret.Data).To(HaveKey("known_hosts"))
	g.Expect(secret.Data).NotTo(HaveKey("password"), "the keys of an earlier bootstrap's Secret are gone")

	// Without known_hosts nothing is cloned, committed or applied.
	_, err = Run(ctx, env.Client, Options{URL: srv.SSHURL("ssh"), Branch: "main", Path: "clusters/edge2",
		Auth: &source.Auth{Identity: srv.ClientIdentity()}, Out: &out})
	g.Expect(err).To(MatchError(ContainSubstring("known_hosts")))
	g.Expect(repo.Head("main")).To(Equal(res.Commit))
}

func TestBadInputs(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"no url", Options{Branch: "main", Path: "clusters/a"}, "--url is required"},
		{"password in url", Options{URL: "https://bot:hunter2@git.example/fleet.git", Branch: "main", Path: "clusters/a"}, "holds a password"},
		{"token as user name in url", Options{URL: "https://hunter2@git.example/fleet.git", Branch: "main", Path: "clusters/a"}, "holds a user name"},
		{"token as user name in http url", Options{URL: "http://hunter2@git.example/fleet.git", Branch: "main", Path: "clusters/a"}, "holds a user name"},
		{"password in ssh url", Options{URL: "ssh://git:hunter2@git.example/fleet.git", Branch: "main", Path: "clusters/a"}, "holds a password"},
		{"no branch", Options{URL: "https://git.example/fleet.git", Path: "clusters/a"}, "--branch is required"},
		{"no path", Options{URL: "https://git.example/fleet.git", Branch: "main"}, "--path"},
		{"root path", Options{URL: "https://git.example/fleet.git", Branch: "main", Path: "./"}, "--path"},
		{"outside", Options{URL: "https://git.example/fleet.git", Branch: "main", Path: "clusters/../../x"}, "--path"},
		{"absolute", Options{URL: "https://git.example/fleet.git", Branch: "main", Path: "/clusters/a"}, "--path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := Run(context.Background(), env.Client, tc.opts)
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
			g.Expect(err.Error()).NotTo(ContainSubstring("hunter2"))
		})
	}
}

// An ssh login name is no credential: ssh://git@host and scp-like git@host:path stay
// allowed, as does a URL without user info.
func TestCheckURLAllowsSSHLogin(t *testing.T) {
	for _, raw := range []string{"ssh://git@git.example/fleet.git", "git@git.example:fleet.git", "https://git.example/fleet.git"} {
		if err := checkURL(raw); err != nil {
			t.Errorf("checkURL(%q) = %v", raw, err)
		}
	}
}
