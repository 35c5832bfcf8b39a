package forge_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/gitsync-dev/gitsync/internal/forge"
	"github.com/gitsync-dev/gitsync/internal/testutil/forgetest"
)

const marker = "<!-- gitsync-preview -->"

// Each forge: a commit status, one comment created then updated in place (someone
// else's comment left alone), open pull requests filtered by label, forks told apart.
func TestForgeClients(t *testing.T) {
	for _, kind := range []string{forgetest.GitHub, forgetest.GitLab, forgetest.Gitea} {
		t.Run(kind, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			srv := forgetest.New(t, kind, "tok3n")
			repoPath := "org/app"
			if kind == forgetest.GitLab {
				repoPath = "group/sub/app"
			}
			repo, err := forge.ParseRepo("https://forge.example/" + repoPath + ".git")
			g.Expect(err).NotTo(HaveOccurred())
			c, err := forge.New(forge.Target{Type: kind, Address: srv.URL, Token: "tok3n"}, nil)
			g.Expect(err).NotTo(HaveOccurred())

			sha := strings.Repeat("ab", 20)
			g.Expect(c.SetStatus(ctx, repo, sha, forge.Status{State: forge.StateFailure, Context: "gitsync/preview",
				Description: strings.Repeat("x", 300), TargetURL: "https://example.com/x"})).To(Succeed())
			st := srv.Statuses()
			g.Expect(st).To(HaveLen(1))
			g.Expect(st[0].Repo).To(Equal(repoPath))
			g.Expect(st[0].SHA).To(Equal(sha))
			g.Expect(st[0].Context).To(Equal("gitsync/preview"))
			g.Expect(st[0].Description).To(HaveLen(140))
			if kind == forgetest.GitLab {
				g.Expect(st[0].State).To(Equal("failed"))
			} else {
				g.Expect(st[0].State).To(Equal("failure"))
			}

			srv.AddComment(repoPath, 7, "LGTM")
			first, err := c.UpsertComment(ctx, repo, 7, marker, "plan one")
			g.Expect(err).NotTo(HaveOccurred())
			second, err := c.UpsertComment(ctx, repo, 7, marker, "plan two")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(second.ID).To(Equal(first.ID))
			comments := srv.Comments(repoPath, 7)
			g.Expect(comments).To(HaveLen(2))
			g.Expect(comments[0].Body).To(Equal("LGTM"))
			g.Expect(comments[1].Body).To(Equal(marker + "\nplan two"))
			g.Expect(comments[1].Edits).To(Equal(1))

			srv.AddPullRequest(forgetest.PullRequest{Repo: repoPath, Number: 7, Branch: "feature", SHA: sha, TargetBranch: "main", Labels: []string{"preview"}})
			srv.AddPullRequest(forgetest.PullRequest{Repo: repoPath, Number: 8, Branch: "other", SHA: sha, TargetBranch: "main"})
			srv.AddPullRequest(forgetest.PullRequest{Repo: repoPath, Number: 9, Branch: "fork-branch", SHA: sha, TargetBranch: "main",
				Labels: []string{"preview", "x"}, ForkRepo: "someone/app"})
			prs, err := c.ListPullRequests(ctx, repo, []string{"preview"})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(prs).To(Equal([]forge.PullRequest{
				{Number: 7, Branch: "feature", HeadSHA: sha, TargetBranch: "main", Labels: []string{"preview"}},
				{Number: 9, Branch: "fork-branch", HeadSHA: sha, TargetBranch: "main", Labels: []string{"preview", "x"}, Fork: true},
			}))
			all, err := c.ListPullRequests(ctx, repo, nil)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(all).To(HaveLen(3))

			bad, _ := forge.New(forge.Target{Type: kind, Address: srv.URL, Token: "wrong"}, nil)
			err = bad.SetStatus(ctx, repo, sha, forge.Status{State: "success", Context: "c"})
			g.Expect(err).To(MatchError(ContainSubstring("401")))
			g.Expect(err.Error()).NotTo(ContainSubstring("wrong"))
			g.Expect(err.Error()).NotTo(ContainSubstring(srv.URL))
		})
	}
}

// An answer larger than MaxResponseBytes is refused, not read to its end.
func TestForgeBoundsAnswers(t *testing.T) {
	g := NewWithT(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("["))
		chunk := []byte(strings.Repeat(`{"id":1,"body":"x"},`, 1000))
		for i := 0; i < forge.MaxResponseBytes/len(chunk)+2; i++ {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	c, err := forge.New(forge.Target{Type: forgetest.GitHub, Address: srv.URL, Token: "t"}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = c.ListComments(context.Background(), forge.Repo{Host: "h", Path: "o/r"}, 1)
	g.Expect(err).To(MatchError(ContainSubstring("larger than")))
}

func TestCommentIsCapped(t *testing.T) {
	g := NewWithT(t)
	srv := forgetest.New(t, forgetest.GitHub, "t")
	c, _ := forge.New(forge.Target{Type: forgetest.GitHub, Address: srv.URL, Token: "t"}, nil)
	body := strings.Repeat("a line of a long plan\n", 10000)
	_, err := c.UpsertComment(context.Background(), forge.Repo{Host: "h", Path: "o/r"}, 1, marker, body)
	g.Expect(err).NotTo(HaveOccurred())
	got := srv.Comments("o/r", 1)[0].Body
	g.Expect(len(got)).To(BeNumerically("<=", forge.MaxCommentBytes))
	g.Expect(got).To(HaveSuffix("(cut: the comment is longer than the forge accepts)\n"))
}
