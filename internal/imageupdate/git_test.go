package imageupdate_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/gitsync-dev/gitsync/internal/egress"
	"github.com/gitsync-dev/gitsync/internal/imageupdate"
	"github.com/gitsync-dev/gitsync/internal/source"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

// gitOut runs git in dir with a config of its own and returns its output.
func gitOut(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=true", "GIT_CONFIG_GLOBAL=/dev/null"}, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func fluxRepo(t *testing.T) (*gittest.Server, *gittest.Repo, imageupdate.Request) {
	t.Helper()
	srv := gittest.NewServer(t, gittest.Options{Username: "bot", Password: "pw"})
	repo := srv.CreateRepo("fleet")
	repo.Commit("main", "initial", map[string]string{
		"apps/podinfo/deployment.yaml": fluxDeployment,
		"apps/README.md":               "image: x # {\"$imagepolicy\": \"flux-system:podinfo\"}\n",
		"other/deployment.yaml":        "image: ghcr.io/stefanprodan/podinfo:5.0.0 # {\"$imagepolicy\": \"flux-system:podinfo\"}\n",
	})
	req := imageupdate.Request{
		URL: srv.HTTPURL("fleet"), Auth: &source.Auth{Username: "bot", Password: "pw"},
		CheckoutBranch: "main", Path: "./apps", Automation: "flux-system/podinfo",
		AuthorName: "fluxcdbot", AuthorEmail: "fluxcdbot@users.noreply.github.com",
		Values:  imageupdate.Values{"flux-system:podinfo": {Name: "ghcr.io/stefanprodan/podinfo", Tag: "5.1.4"}},
		WorkDir: t.TempDir(),
	}
	return srv, repo, req
}

// TestRunCommitsExactlyTheMarkedFields: one commit on the branch, changing the marked
// fields under update.path and nothing else; a second run pushes nothing.
func TestRunCommitsExactlyTheMarkedFields(t *testing.T) {
	_, repo, req := fluxRepo(t)
	before := repo.Head("main")
	req.MessageTemplate = "Automated image update\n\n{{ range .Changed.Changes }}{{ .OldValue }} -> {{ .NewValue }}\n{{ end }}"
	res, err := imageupdate.Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Commit == "" || res.Commit != repo.Head("main") {
		t.Fatalf("pushed %q, main is at %s", res.Commit, repo.Head("main"))
	}
	bare := repo.Path()
	if parent := strings.TrimSpace(gitOut(t, bare, nil, "rev-parse", res.Commit+"^")); parent != before {
		t.Fatalf("the commit's parent is %s, want the previous head %s (one commit)", parent, before)
	}
	if files := strings.TrimSpace(gitOut(t, bare, nil, "diff", "--name-only", before, res.Commit)); files != "apps/podinfo/deployment.yaml" {
		t.Fatalf("changed files = %q, want only apps/podinfo/deployment.yaml (README and other/ untouched)", files)
	}
	got := gitOut(t, bare, nil, "show", res.Commit+":apps/podinfo/deployment.yaml")
	want := strings.NewReplacer("podinfo:5.0.0 #", "podinfo:5.1.4 #", "newTag: '5.0.0'", "newTag: '5.1.4'").Replace(fluxDeployment)
	if got != want {
		t.Fatalf("file after the update:\n%s\nwant (byte for byte):\n%s", got, want)
	}
	msg := gitOut(t, bare, nil, "log", "-1", "--format=%an <%ae>%n%B", res.Commit)
	if !strings.Contains(msg, "fluxcdbot <fluxcdbot@users.noreply.github.com>") || !strings.Contains(msg, "ghcr.io/stefanprodan/podinfo:5.0.0 -> ghcr.io/stefanprodan/podinfo:5.1.4") {
		t.Fatalf("commit:\n%s", msg)
	}

	again, err := imageupdate.Run(context.Background(), req)
	if err != nil || again.Commit != "" || repo.Head("main") != res.Commit {
		t.Fatalf("second run pushed %q (err %v); main moved to %s", again.Commit, err, repo.Head("main"))
	}
}

func TestRunOutsideTheRangeOrWrongCredentialsPushesNothing(t *testing.T) {
	_, repo, req := fluxRepo(t)
	before := repo.Head("main")
	req.Values = imageupdate.Values{"flux-system:other": {Name: "x", Tag: "9"}}
	res, err := imageupdate.Run(context.Background(), req)
	if err != nil || res.Commit != "" || repo.Head("main") != before {
		t.Fatalf("a policy no marker names pushed %q (err %v)", res.Commit, err)
	}
	req.Auth = &source.Auth{Username: "bot", Password: "wrong"}
	if _, err := imageupdate.Run(context.Background(), req); err == nil || strings.Contains(err.Error(), "wrong") {
		t.Fatalf("wrong credentials: err = %v (must fail without quoting the password)", err)
	}
	req.Auth, req.Path = &source.Auth{Username: "bot", Password: "pw"}, "../"
	if _, err := imageupdate.Run(context.Background(), req); err == nil {
		t.Fatal("an update.path out of the checkout was accepted")
	}
}

// TestRunRetriesWhenTheBranchMoved: someone pushes between the clone and the push; the
// run starts again from the new head and lands on top of it.
func TestRunRetriesWhenTheBranchMoved(t *testing.T) {
	_, repo, req := fluxRepo(t)
	var theirs string
	imageupdate.SetBeforePush(func(attempt int) {
		if attempt == 1 {
			theirs = repo.Commit("main", "a person's commit", map[string]string{"apps/notes.txt": "meanwhile\n"})
		}
	})
	t.Cleanup(func() { imageupdate.SetBeforePush(nil) })
	res, err := imageupdate.Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempts != 2 || res.Commit != repo.Head("main") {
		t.Fatalf("attempts = %d, commit %s, main %s", res.Attempts, res.Commit, repo.Head("main"))
	}
	if parent := strings.TrimSpace(gitOut(t, repo.Path(), nil, "rev-parse", res.Commit+"^")); parent != theirs {
		t.Fatalf("the update's parent is %s, want the commit pushed meanwhile %s", parent, theirs)
	}
}

func TestRunPushesToAReviewBranch(t *testing.T) {
	_, repo, req := fluxRepo(t)
	before := repo.Head("main")
	req.PushBranch = "image-updates"
	res, err := imageupdate.Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if repo.Head("main") != before || repo.Head("image-updates") != res.Commit {
		t.Fatalf("main %s (was %s), image-updates %s, pushed %s", repo.Head("main"), before, repo.Head("image-updates"), res.Commit)
	}
	// The next update piles up on the review branch.
	req.Values = imageupdate.Values{"flux-system:podinfo": {Name: "ghcr.io/stefanprodan/podinfo", Tag: "5.2.0"}}
	next, err := imageupdate.Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if parent := strings.TrimSpace(gitOut(t, repo.Path(), nil, "rev-parse", next.Commit+"^")); parent != res.Commit {
		t.Fatalf("second update's parent %s, want the review branch's head %s", parent, res.Commit)
	}
}

// TestSignedCommitVerifies: an SSH-signed commit passes `git verify-commit` with
// gpg.format=ssh and an allowed signers file.
func TestSignedCommitVerifies(t *testing.T) {
	_, repo, req := fluxRepo(t)
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	req.Signer, err = imageupdate.SignerFromSecret(map[string][]byte{imageupdate.SigningKeySSH: pem.EncodeToMemory(block)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := imageupdate.Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	signers := filepath.Join(dir, "allowed_signers")
	line := req.AuthorEmail + " namespaces=\"git\" " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPub))) + "\n"
	if err := os.WriteFile(signers, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "gitconfig")
	if err := os.WriteFile(cfg, []byte("[gpg]\n\tformat = ssh\n[gpg \"ssh\"]\n\tallowedSignersFile = "+signers+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := gitOut(t, repo.Path(), []string{"GIT_CONFIG_GLOBAL=" + cfg}, "verify-commit", "-v", res.Commit)
	if !strings.Contains(out, "Good \"git\" signature") {
		t.Fatalf("verify-commit:\n%s", out)
	}
}

// TestRunBoundsWhatItReads: a repository larger than MaxBytes fails the run, and the
// egress guard refuses a denied address.
func TestRunBoundsWhatItReads(t *testing.T) {
	_, repo, req := fluxRepo(t)
	big := make([]byte, 256<<10)
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	repo.Commit("main", "a large file", map[string]string{"blob.bin": string(big)})
	before := repo.Head("main")
	req.MaxBytes = 64 << 10
	if _, err := imageupdate.Run(context.Background(), req); !errors.Is(err, imageupdate.ErrTooLarge) {
		t.Fatalf("a 256 KiB repository under a 64 KiB bound: err = %v, want ErrTooLarge", err)
	}
	req.MaxBytes = 0
	req.Egress = egress.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})
	if _, err := imageupdate.Run(context.Background(), req); !errors.Is(err, egress.ErrDenied) {
		t.Fatalf("a loopback remote under the guard: err = %v, want ErrDenied", err)
	}
	if repo.Head("main") != before {
		t.Fatal("something was pushed")
	}
}

// TestRunOverSSH: the same update over SSH with a key, dialled through the egress guard's
// proxy (a guard that allows loopback).
func TestRunOverSSH(t *testing.T) {
	srv, repo, req := fluxRepo(t)
	req.URL = srv.SSHURL("fleet")
	req.Auth = &source.Auth{Identity: srv.ClientIdentity(), KnownHosts: srv.KnownHosts()}
	req.Egress = egress.New([]netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")})
	res, err := imageupdate.Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Commit == "" || repo.Head("main") != res.Commit {
		t.Fatalf("pushed %q, main at %s", res.Commit, repo.Head("main"))
	}
}
