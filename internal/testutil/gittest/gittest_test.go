package gittest

import (
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
)

// cli runs the git CLI as a client in dir and returns its combined output.
func cli(t *testing.T, dir string, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + t.TempDir(),
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_CONFIG_NOSYSTEM=true",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=client", "GIT_AUTHOR_EMAIL=client@example.com",
		"GIT_COMMITTER_NAME=client", "GIT_COMMITTER_EMAIL=client@example.com",
	}, env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// withCredentials puts user:pass into an http:// URL.
func withCredentials(url, user, pass string) string {
	return strings.Replace(url, "http://", "http://"+user+":"+pass+"@", 1)
}

// sshEnv returns the environment for the git CLI to use the server's SSH
// client key and host key.
func sshEnv(t *testing.T, s *Server) []string {
	t.Helper()
	dir := t.TempDir()
	key, knownHosts := filepath.Join(dir, "id_ed25519"), filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(key, s.ClientIdentity(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(knownHosts, s.KnownHosts(), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"GIT_SSH_COMMAND=ssh -F /dev/null -i " + key + " -o UserKnownHostsFile=" + knownHosts +
		" -o StrictHostKeyChecking=yes -o IdentitiesOnly=yes -o BatchMode=yes"}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestHTTPCloneWithBasicAuth(t *testing.T) {
	g := NewWithT(t)
	s := NewServer(t, Options{Username: "alice", Password: "s3cret"})
	repo := s.CreateRepo("app")
	sha := repo.Commit("main", "initial", map[string]string{"README.md": "hello\n"})
	g.Expect(sha).To(MatchRegexp(`^[0-9a-f]{40}$`))
	g.Expect(s.HTTPURL("app")).To(MatchRegexp(`^http://127\.0\.0\.1:\d+/app\.git$`))

	dir := t.TempDir()
	out, err := cli(t, dir, nil, "clone", withCredentials(s.HTTPURL("app"), "alice", "s3cret"), "c")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(readFile(t, filepath.Join(dir, "c", "README.md"))).To(Equal("hello\n"))
	head, err := cli(t, filepath.Join(dir, "c"), nil, "rev-parse", "HEAD")
	g.Expect(err).NotTo(HaveOccurred(), head)
	g.Expect(strings.TrimSpace(head)).To(Equal(sha))
	g.Expect(s.Counts("app")).To(Equal(Counts{RefListings: 1, Fetches: 1}))
	g.Expect(s.Counts("app.git")).To(Equal(Counts{RefListings: 1, Fetches: 1}))

	out, err = cli(t, dir, nil, "clone", withCredentials(s.HTTPURL("app"), "alice", "wrong"), "bad")
	g.Expect(err).To(HaveOccurred(), out)
	out, err = cli(t, dir, nil, "clone", s.HTTPURL("app"), "anonymous")
	g.Expect(err).To(HaveOccurred(), out)
	g.Expect(s.Counts("app")).To(Equal(Counts{RefListings: 1, Fetches: 1}))

	s.ResetCounts()
	g.Expect(s.Counts("app")).To(Equal(Counts{}))
}

// Options.Served hears of each HTTP request, once answered, with when it arrived.
func TestServedHearsEachRequest(t *testing.T) {
	g := NewWithT(t)
	var mu sync.Mutex
	var served []string
	before := time.Now()
	s := NewServer(t, Options{Served: func(method, path string, arrived time.Time) {
		mu.Lock()
		defer mu.Unlock()
		if arrived.Before(before) || arrived.After(time.Now()) {
			t.Errorf("%s %s arrived at %v, not between the start and now", method, path, arrived)
		}
		served = append(served, method+" "+path)
	}})
	s.CreateRepo("app").Commit("main", "initial", map[string]string{"a.txt": "a"})
	out, err := cli(t, "", nil, "ls-remote", s.HTTPURL("app"))
	g.Expect(err).NotTo(HaveOccurred(), out)
	mu.Lock()
	defer mu.Unlock()
	g.Expect(served).To(ContainElement("GET /app.git/info/refs"))
}

func TestHTTPLsRemoteAndPush(t *testing.T) {
	g := NewWithT(t)
	s := NewServer(t, Options{})
	repo := s.CreateRepo("app")
	sha := repo.Commit("main", "initial", map[string]string{"a.txt": "a"})

	out, err := cli(t, "", nil, "ls-remote", s.HTTPURL("app"))
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring(sha + "\trefs/heads/main"))
	g.Expect(s.Counts("app")).To(Equal(Counts{RefListings: 1, Fetches: 0}))
	g.Expect(s.Counts("other")).To(Equal(Counts{}))

	// Pushes over HTTP work too, even large (chunked) ones, and a fetch that
	// is up to date asks for nothing.
	dir := t.TempDir()
	out, err = cli(t, dir, nil, "clone", s.HTTPURL("app"), ".")
	g.Expect(err).NotTo(HaveOccurred(), out)
	big := make([]byte, 3<<20)
	_, _ = rand.Read(big)
	g.Expect(os.WriteFile(filepath.Join(dir, "b.txt"), big, 0o644)).To(Succeed())
	for _, args := range [][]string{{"add", "b.txt"}, {"commit", "-m", "b"}, {"push", "origin", "main"}} {
		out, err = cli(t, dir, nil, args...)
		g.Expect(err).NotTo(HaveOccurred(), out)
	}
	pushed, _ := cli(t, dir, nil, "rev-parse", "HEAD")
	g.Expect(repo.Head("main")).To(Equal(strings.TrimSpace(pushed)))
	s.ResetCounts()
	out, err = cli(t, dir, nil, "fetch", "origin")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(s.Counts("app")).To(Equal(Counts{RefListings: 1, Fetches: 0}))
}

func TestSSHCloneWithGitCLI(t *testing.T) {
	g := NewWithT(t)
	s := NewServer(t, Options{Username: "alice", Password: "only-for-http"})
	repo := s.CreateRepo("app")
	sha := repo.Commit("main", "initial", map[string]string{"dir/file.yaml": "kind: ConfigMap\n"})
	g.Expect(s.SSHURL("app")).To(MatchRegexp(`^ssh://git@127\.0\.0\.1:\d+/app\.git$`))
	g.Expect(string(s.KnownHosts())).To(MatchRegexp(`^\[127\.0\.0\.1\]:\d+ ssh-ed25519 AAAA\S+\n$`))
	g.Expect(string(s.ClientIdentity())).To(HavePrefix("-----BEGIN OPENSSH PRIVATE KEY-----"))

	env := sshEnv(t, s)
	dir := t.TempDir()
	out, err := cli(t, dir, env, "clone", s.SSHURL("app"), "c")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(readFile(t, filepath.Join(dir, "c", "dir", "file.yaml"))).To(Equal("kind: ConfigMap\n"))
	g.Expect(s.Counts("app")).To(Equal(Counts{RefListings: 1, Fetches: 1}))

	out, err = cli(t, dir, env, "ls-remote", s.SSHURL("app"))
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring(sha + "\trefs/heads/main"))
	g.Expect(s.Counts("app")).To(Equal(Counts{RefListings: 2, Fetches: 1}))

	// Push over SSH (receive-pack) does not count as upload-pack.
	c := filepath.Join(dir, "c")
	g.Expect(os.WriteFile(filepath.Join(c, "new.txt"), []byte("new"), 0o644)).To(Succeed())
	for _, args := range [][]string{{"add", "new.txt"}, {"commit", "-m", "new"}, {"push", "origin", "HEAD:refs/heads/pushed"}} {
		out, err = cli(t, c, env, args...)
		g.Expect(err).NotTo(HaveOccurred(), out)
	}
	g.Expect(repo.Head("pushed")).NotTo(Equal(sha))
	g.Expect(s.Counts("app")).To(Equal(Counts{RefListings: 2, Fetches: 1}))

	// Paths outside the root and unknown repos are refused.
	for _, url := range []string{
		strings.Replace(s.SSHURL("app"), "/app.git", "/../app.git", 1),
		s.SSHURL("missing"),
	} {
		out, err = cli(t, dir, env, "ls-remote", url)
		g.Expect(err).To(HaveOccurred(), out)
	}
}

func TestSSHCloneWithGoGit(t *testing.T) {
	g := NewWithT(t)
	s := NewServer(t, Options{})
	repo := s.CreateRepo("app")
	sha := repo.Commit("main", "initial", map[string]string{"a.txt": "a"})

	knownHosts := filepath.Join(t.TempDir(), "known_hosts")
	g.Expect(os.WriteFile(knownHosts, s.KnownHosts(), 0o600)).To(Succeed())
	auth, err := gitssh.NewPublicKeys("git", s.ClientIdentity(), "")
	g.Expect(err).NotTo(HaveOccurred())
	auth.HostKeyCallback, err = gitssh.NewKnownHostsCallback(knownHosts)
	g.Expect(err).NotTo(HaveOccurred())

	dir := t.TempDir()
	r, err := git.PlainClone(dir, false, &git.CloneOptions{URL: s.SSHURL("app"), Auth: auth})
	g.Expect(err).NotTo(HaveOccurred())
	head, err := r.Head()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(head.Hash().String()).To(Equal(sha))
	g.Expect(readFile(t, filepath.Join(dir, "a.txt"))).To(Equal("a"))
	g.Expect(s.Counts("app")).To(Equal(Counts{RefListings: 1, Fetches: 1}))

	// Up to date: the refs are listed, no objects are asked for.
	g.Expect(r.Fetch(&git.FetchOptions{Auth: auth})).To(MatchError(git.NoErrAlreadyUpToDate))
	g.Expect(s.Counts("app")).To(Equal(Counts{RefListings: 2, Fetches: 1}))

	// Any other client key is refused.
	other := NewServer(t, Options{})
	wrong, err := gitssh.NewPublicKeys("git", other.ClientIdentity(), "")
	g.Expect(err).NotTo(HaveOccurred())
	wrong.HostKeyCallback = auth.HostKeyCallback
	_, err = git.PlainClone(t.TempDir(), false, &git.CloneOptions{URL: s.SSHURL("app"), Auth: wrong})
	g.Expect(err).To(HaveOccurred())
}

func TestStopStart(t *testing.T) {
	g := NewWithT(t)
	s := NewServer(t, Options{})
	s.CreateRepo("app").Commit("main", "initial", map[string]string{"a.txt": "a"})
	env := sshEnv(t, s)
	clone := func(url string) error {
		out, err := cli(t, "", env, "clone", url, t.TempDir())
		if err != nil {
			t.Logf("clone %s: %v: %s", url, err, out)
		}
		return err
	}
	httpURL, sshURL := s.HTTPURL("app"), s.SSHURL("app")
	g.Expect(clone(httpURL)).To(Succeed())
	g.Expect(clone(sshURL)).To(Succeed())

	s.Stop()
	s.Stop() // no-op
	g.Expect(clone(httpURL)).NotTo(Succeed())
	g.Expect(clone(sshURL)).NotTo(Succeed())

	s.Start()
	s.Start() // no-op
	g.Expect(s.HTTPURL("app")).To(Equal(httpURL))
	g.Expect(s.SSHURL("app")).To(Equal(sshURL))
	g.Expect(clone(httpURL)).To(Succeed())
	g.Expect(clone(sshURL)).To(Succeed())
	g.Expect(s.Counts("app")).To(Equal(Counts{RefListings: 4, Fetches: 4}))
}

func TestStopClosesOpenConnections(t *testing.T) {
	g := NewWithT(t)
	s := NewServer(t, Options{})
	s.CreateRepo("app").Commit("main", "initial", map[string]string{"a.txt": "a"})

	// An SSH session whose upload-pack waits for a client that never speaks.
	signer, err := ssh.ParsePrivateKey(s.ClientIdentity())
	g.Expect(err).NotTo(HaveOccurred())
	hostKey, _, _, _, err := ssh.ParseAuthorizedKey(s.KnownHosts()[strings.IndexByte(string(s.KnownHosts()), ' ')+1:])
	g.Expect(err).NotTo(HaveOccurred())
	addr := strings.TrimSuffix(strings.TrimPrefix(s.SSHURL("app"), "ssh://git@"), "/app.git")
	client, err := ssh.Dial("tcp", addr, &ssh.ClientConfig{
		User:            "git",
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.FixedHostKey(hostKey),
	})
	g.Expect(err).NotTo(HaveOccurred())
	defer client.Close()
	session, err := client.NewSession()
	g.Expect(err).NotTo(HaveOccurred())
	stdout, err := session.StdoutPipe()
	g.Expect(err).NotTo(HaveOccurred())
	_, err = session.StdinPipe() // kept open
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(session.Start("git-upload-pack '/app.git'")).To(Succeed())
	_, err = stdout.Read(make([]byte, 4)) // the advertisement has started
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() Counts { return s.Counts("app") }).Should(Equal(Counts{RefListings: 1}))

	stopped := make(chan struct{})
	go func() {
		s.Stop()
		close(stopped)
	}()
	g.Eventually(stopped, 5*time.Second).Should(BeClosed())
	g.Expect(session.Wait()).To(HaveOccurred())
}

func TestRepo(t *testing.T) {
	g := NewWithT(t)
	s := NewServer(t, Options{})
	repo := s.CreateRepo("team/app")
	g.Expect(repo.Path()).To(Equal(filepath.Join(s.root, "team", "app.git")))
	g.Expect(s.HTTPURL("team/app")).To(HaveSuffix("/team/app.git"))
	headRef, err := os.ReadFile(filepath.Join(repo.Path(), "HEAD"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(headRef)).To(Equal("ref: refs/heads/main\n"))

	// The first commit on any branch of an empty repo is an orphan.
	first := repo.Commit("main", "first", map[string]string{"a.txt": "a", "deep/dir/b.txt": "b"})
	g.Expect(repo.Head("main")).To(Equal(first))
	parents, _ := cli(t, repo.Path(), nil, "rev-list", "--parents", "-n1", first)
	g.Expect(strings.Fields(parents)).To(Equal([]string{first}))

	// Commits are reproducible.
	other := s.CreateRepo("other")
	g.Expect(other.Commit("main", "first", map[string]string{"a.txt": "a", "deep/dir/b.txt": "b"})).To(Equal(first))

	// Changes and deletes on main.
	second := repo.Commit("main", "second", map[string]string{"a.txt": "A"}, "deep")
	g.Expect(repo.Head("main")).To(Equal(second))
	files, _ := cli(t, repo.Path(), nil, "ls-tree", "-r", "--name-only", second)
	g.Expect(strings.Fields(files)).To(Equal([]string{"a.txt"}))
	content, _ := cli(t, repo.Path(), nil, "show", second+":a.txt")
	g.Expect(content).To(Equal("A"))

	// A new branch starts from main, which is left alone.
	feature := repo.Commit("feature", "feature", map[string]string{"f.txt": "f"})
	g.Expect(repo.Head("main")).To(Equal(second))
	parents, _ = cli(t, repo.Path(), nil, "rev-list", "--parents", "-n1", feature)
	g.Expect(strings.Fields(parents)).To(Equal([]string{feature, second}))

	// CommitFunc commits whatever is in the work tree, symlinks included.
	linked := repo.CommitFunc("feature", "symlink", func(worktree string) {
		g.Expect(readFile(t, filepath.Join(worktree, "f.txt"))).To(Equal("f"))
		g.Expect(os.Symlink("a.txt", filepath.Join(worktree, "link"))).To(Succeed())
		g.Expect(os.Remove(filepath.Join(worktree, "f.txt"))).To(Succeed())
	})
	tree, _ := cli(t, repo.Path(), nil, "ls-tree", linked)
	g.Expect(tree).To(ContainSubstring("120000 blob"))
	g.Expect(tree).NotTo(ContainSubstring("f.txt"))

	// Tags, lightweight and annotated, at a sha or a branch.
	repo.Tag("v1.0.0", first, false)
	repo.Tag("v2.0.0", "feature", true)
	refs, _ := cli(t, repo.Path(), nil, "show-ref", "--tags", "--dereference")
	g.Expect(refs).To(ContainSubstring(first + " refs/tags/v1.0.0\n"))
	g.Expect(refs).To(ContainSubstring(linked + " refs/tags/v2.0.0^{}\n"))
	kind, _ := cli(t, repo.Path(), nil, "cat-file", "-t", "v2.0.0")
	g.Expect(strings.TrimSpace(kind)).To(Equal("tag"))

	// The default branch is what a clone checks out.
	repo.SetDefaultBranch("feature")
	dir := t.TempDir()
	out, err := cli(t, dir, nil, "clone", s.HTTPURL("team/app"), ".")
	g.Expect(err).NotTo(HaveOccurred(), out)
	branch, _ := cli(t, dir, nil, "branch", "--show-current")
	g.Expect(strings.TrimSpace(branch)).To(Equal("feature"))
	target, err := os.Readlink(filepath.Join(dir, "link"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(target).To(Equal("a.txt"))

	// go-git sees the same.
	r, err := git.PlainOpen(repo.Path())
	g.Expect(err).NotTo(HaveOccurred())
	ref, err := r.Reference(plumbing.NewBranchReferenceName("feature"), true)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ref.Hash().String()).To(Equal(linked))
}

func TestParseCommand(t *testing.T) {
	g := NewWithT(t)
	s := NewServer(t, Options{})
	s.CreateRepo("app")
	srv := &sshServer{s: s}
	for _, cmd := range []string{"git-upload-pack '/app.git'", "git-upload-pack 'app.git'", "git-receive-pack /app.git"} {
		_, dir, repo, err := srv.parseCommand(cmd)
		g.Expect(err).NotTo(HaveOccurred(), cmd)
		g.Expect(dir).To(Equal(filepath.Join(s.root, "app.git")))
		g.Expect(repo).To(Equal("app"))
	}
	for _, cmd := range []string{"git-upload-pack '/../app.git'", "git-upload-pack 'a/../../x'", "git-upload-pack ''", "sh -c id", "git-upload-pack '/nope.git'"} {
		_, _, _, err := srv.parseCommand(cmd)
		g.Expect(err).To(HaveOccurred(), cmd)
	}
}
