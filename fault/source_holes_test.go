package fault

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/source"
)

// borrowingGitServer is an attacker's Git server: whatever it is asked it redirects to
// /info/refs, where it advertises sha (another tenant's commit, seen in a status or an
// event) as main. It has no objects. It counts the requests it gets.
func borrowingGitServer(t *testing.T, sha string) (*httptest.Server, *atomic.Int32) {
	var requests atomic.Int32
	pkt := func(s string) string { return fmt.Sprintf("%04x%s", len(s)+4, s) }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.URL.Path != "/info/refs" {
			http.Redirect(w, r, "/info/refs?service=git-upload-pack", http.StatusFound)
			return
		}
		w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
		_, _ = io.WriteString(w, pkt("# service=git-upload-pack\n")+"0000"+
			pkt(sha+" HEAD\x00side-band-64k ofs-delta symref=HEAD:refs/heads/main\n")+pkt(sha+" refs/heads/main\n")+"0000")
	}))
	t.Cleanup(srv.Close)
	return srv, &requests
}

// waitSourceNotReady waits until the GitRepository ns/name is Ready=False with reason and
// returns the condition.
func waitSourceNotReady(t *testing.T, ns, name, reason string, timeout time.Duration) *metav1.Condition {
	t.Helper()
	var cond *metav1.Condition
	NewWithT(t).Eventually(func(g Gomega) {
		repo := &gitsyncv1.GitRepository{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, repo)).To(Succeed())
		cond = apimeta.FindStatusCondition(repo.Status.Conditions, gitsyncv1.ReadyCondition)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(metav1.ConditionFalse), "%s: %s", cond.Reason, cond.Message)
		g.Expect(cond.Reason).To(Equal(reason), cond.Message)
	}).WithTimeout(timeout).WithPolling(pollInterval).Should(Succeed())
	return cond
}

// Issue 34, item 2, "checkout borrowing by URL parsing", against the operator binary: a
// tenant's GitRepository whose URL text names another tenant's repository
// (http://evil#@victim/app.git, or ?@) but dials the tenant's own server, which
// advertises the victim's commit, is refused with URLInvalid before anything is dialled;
// the tenant's Application gets nothing of the victim's checkout; the operator is the same
// process; another namespace's Application keeps syncing.
func TestGitURLBorrowingAcrossTenants(t *testing.T) {
	t.Parallel()
	sharedOperator(t)
	g := NewWithT(t)
	before := sharedState()

	secret := desired{configMaps: map[string]map[string]string{"victim-data": {"secret": "team-a's data"}}}
	victim, victimSHA := newFixture(t, secret.files(), time.Second)
	victim.waitApplied(victimSHA, time.Minute)
	other, otherSHA := newFixture(t, smallRevision("v0", "one").files(), time.Second)
	other.waitApplied(otherSHA, time.Minute)

	evil, requests := borrowingGitServer(t, victimSHA)
	victimHostPath := strings.TrimPrefix(victim.srv.HTTPURL("app"), "http://")
	evilHost := strings.TrimPrefix(evil.URL, "http://")
	attacker := env.Namespace(t)
	urls := map[string]string{
		"fragment": "http://" + evilHost + "#@" + victimHostPath,
		"query":    "http://" + evilHost + "?@" + victimHostPath,
	}
	ctx := context.Background()
	for name, url := range urls {
		g.Expect(env.Client.Create(ctx, &gitsyncv1.GitRepository{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: attacker},
			Spec: gitsyncv1.GitRepositorySpec{URL: url, Ref: &gitsyncv1.GitRepositoryRef{Branch: "main"},
				Interval: &metav1.Duration{Duration: time.Second}, Timeout: &metav1.Duration{Duration: 10 * time.Second}},
		})).To(Succeed())
		g.Expect(env.Client.Create(ctx, &gitsyncv1.Application{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: attacker},
			Spec: gitsyncv1.ApplicationSpec{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: name},
				Path: "./", Prune: true},
		})).To(Succeed())
	}
	t.Cleanup(func() { suspendAll(t, attacker, urls) })
	for name := range urls {
		cond := waitSourceNotReady(t, attacker, name, gitsyncv1.URLInvalidReason, time.Minute)
		t.Logf("%s: %s", name, cond.Message)
	}

	// While the attack is refused, the other tenant's new revision is applied.
	sha := other.repo.Commit("main", "during the attack", smallRevision("v1", "one", "two").files())
	other.waitApplied(sha, 30*time.Second)

	// The attacker got nothing: no artifact, nothing applied, not the victim's ConfigMap.
	for name := range urls {
		repo := &gitsyncv1.GitRepository{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: attacker, Name: name}, repo)).To(Succeed())
		g.Expect(repo.Status.Artifact).To(BeNil(), name)
		app := &gitsyncv1.Application{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: attacker, Name: name}, app)).To(Succeed())
		g.Expect(app.Status.LastAppliedRevision).To(BeEmpty(), name)
	}
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: attacker, Name: "victim-data"}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the victim's ConfigMap in the attacker's namespace: %v", err)
	g.Expect(requests.Load()).To(BeZero(), "the attacker's server was dialled")
	before.expectAlive(g)
}

// suspendAll suspends the GitRepositories and Applications named by names' keys in ns.
func suspendAll(t *testing.T, ns string, names map[string]string) {
	g := NewWithT(t)
	ctx := context.Background()
	for name := range names {
		for _, obj := range []client.Object{&gitsyncv1.GitRepository{}, &gitsyncv1.Application{}} {
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj)).To(Succeed())
			patch := []byte(`{"spec":{"suspend":true}}`)
			g.Expect(env.Client.Patch(ctx, obj, client.RawPatch("application/merge-patch+json", patch))).To(Succeed())
		}
	}
}

// commitTreeBomb commits on main of the bare repository at path, with go-git's object
// API, a tree that names one blob of blobSize bytes fanOut² times (fanOut directories
// that are one tree of fanOut files) beside the files of the current commit, and returns
// its sha. The new objects are a few KiB whatever the fan-out.
func commitTreeBomb(t *testing.T, path string, fanOut, blobSize int) string {
	t.Helper()
	r, err := git.PlainOpen(path)
	if err != nil {
		t.Fatal(err)
	}
	st := r.Storer
	store := func(o interface {
		Encode(plumbing.EncodedObject) error
	}) plumbing.Hash {
		obj := st.NewEncodedObject()
		if err := o.Encode(obj); err != nil {
			t.Fatal(err)
		}
		h, err := st.SetEncodedObject(obj)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	blob := st.NewEncodedObject()
	blob.SetType(plumbing.BlobObject)
	w, err := blob.Writer()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(bytes.Repeat([]byte("x"), blobSize)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	blobHash, err := st.SetEncodedObject(blob)
	if err != nil {
		t.Fatal(err)
	}
	fan := func(prefix string, mode filemode.FileMode, h plumbing.Hash) plumbing.Hash {
		tree := &object.Tree{}
		for i := range fanOut {
			tree.Entries = append(tree.Entries, object.TreeEntry{Name: fmt.Sprintf("%s%07d", prefix, i), Mode: mode, Hash: h})
		}
		return store(tree)
	}
	dirs := fan("d", filemode.Dir, fan("f", filemode.Regular, blobHash))
	head, err := r.Reference(plumbing.NewBranchReferenceName("main"), true)
	if err != nil {
		t.Fatal(err)
	}
	parent, err := r.CommitObject(head.Hash())
	if err != nil {
		t.Fatal(err)
	}
	tree, err := parent.Tree()
	if err != nil {
		t.Fatal(err)
	}
	// "bomb" sorts before the fixture's files: the walk meets it first.
	root := &object.Tree{Entries: append([]object.TreeEntry{{Name: "bomb", Mode: filemode.Dir, Hash: dirs}}, tree.Entries...)}
	sig := object.Signature{Name: "attacker", Email: "attacker@example.com", When: time.Now()}
	commit := store(&object.Commit{Author: sig, Committer: sig, Message: "a tree bomb",
		TreeHash: store(root), ParentHashes: []plumbing.Hash{head.Hash()}})
	if err := st.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName("main"), commit)); err != nil {
		t.Fatal(err)
	}
	return commit.String()
}

// countFiles is the number of files and directories under dir.
func countFiles(dir string) int {
	n := 0
	_ = filepath.WalkDir(dir, func(string, fs.DirEntry, error) error {
		n++
		return nil
	})
	return n
}

// Issue 34, item 2, "Git tree bombs", against the operator binary: a commit of a few KiB
// of objects whose trees name one blob a million times fails its GitRepository with
// TooLarge at the checkout's default cap of files (nothing of it stays on disk); the
// Application keeps the last good revision's objects; the operator is the same process;
// another namespace's Application keeps syncing meanwhile.
func TestGitTreeBomb(t *testing.T) {
	t.Parallel()
	sharedOperator(t)
	g := NewWithT(t)
	before := sharedState()

	good := smallRevision("good", "one")
	bomb, goodSHA := newFixture(t, good.files(), time.Second)
	bomb.waitApplied(goodSHA, time.Minute)
	other, otherSHA := newFixture(t, smallRevision("v0", "one").files(), time.Second)
	other.waitApplied(otherSHA, time.Minute)

	bombSHA := commitTreeBomb(t, bomb.repo.Path(), 1000, 1)
	for i := 1; i <= 2; i++ {
		sha := other.repo.Commit("main", fmt.Sprint("revision ", i), smallRevision(fmt.Sprint("v", i), "one").files())
		other.waitApplied(sha, 30*time.Second)
	}
	cond := waitSourceNotReady(t, bomb.ns, repoName, gitsyncv1.TooLargeReason, 5*time.Minute)
	t.Logf("the tree bomb: %s", cond.Message)
	g.Expect(cond.Message).To(ContainSubstring(bombSHA))
	g.Expect(cond.Message).To(ContainSubstring(fmt.Sprintf("more than %d files", source.DefaultMaxFiles)))

	// The last good revision stays applied, and its artifact recorded.
	repo := bomb.gitRepository(g)
	g.Expect(repo.Status.Artifact).NotTo(BeNil())
	g.Expect(repo.Status.Artifact.Revision).To(Equal(revision(goodSHA)))
	g.Expect(bomb.app(g).Status.LastAppliedRevision).To(Equal(revision(goodSHA)))
	bomb.checkWorld(g, good)

	// No disk filled: the partial checkout is gone (the other tests' checkouts are small).
	checkouts := filepath.Join(workDir, "shared-storage", "checkouts")
	g.Expect(countFiles(checkouts)).To(BeNumerically("<", source.DefaultMaxFiles/10))

	sha := other.repo.Commit("main", "after the bomb", smallRevision("after", "one").files())
	other.waitApplied(sha, 30*time.Second)
	before.expectAlive(g)
}
