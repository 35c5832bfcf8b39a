package forge

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// MaxCommentBytes caps a comment's body (GitHub refuses more than 65,536 characters);
// a longer body is cut, with a line that says so.
const MaxCommentBytes = 60000

// Comment is a comment on a pull request (GitLab: a note on a merge request).
type Comment struct {
	ID   int64  `json:"id"`
	Body string `json:"body"`
}

// commentsPath is where a pull request's comments are listed and created:
// GitHub and Gitea /repos/{o}/{r}/issues/{n}/comments, GitLab
// /projects/{p}/merge_requests/{iid}/notes.
func (t Target) commentsPath(repo Repo, number int) string {
	if t.Type == gitsyncv1.ProviderGitLab {
		return fmt.Sprintf("%s/merge_requests/%d/notes", t.repoPath(repo), number)
	}
	return fmt.Sprintf("%s/issues/%d/comments", t.repoPath(repo), number)
}

// commentPath is where one comment is updated (GitHub, Gitea: PATCH; GitLab: PUT).
func (t Target) commentPath(repo Repo, number int, id int64) (string, string) {
	if t.Type == gitsyncv1.ProviderGitLab {
		return http.MethodPut, fmt.Sprintf("%s/merge_requests/%d/notes/%d", t.repoPath(repo), number, id)
	}
	return http.MethodPatch, fmt.Sprintf("%s/issues/comments/%d", t.repoPath(repo), id)
}

// pageQuery is the query of page p (from 1) of 100 items (Gitea: its limit parameter).
func (t Target) pageQuery(p int) string {
	if t.Type == gitsyncv1.ProviderGitea {
		return "limit=50&page=" + strconv.Itoa(p)
	}
	return "per_page=100&page=" + strconv.Itoa(p)
}

func (t Target) pageSize() int {
	if t.Type == gitsyncv1.ProviderGitea {
		return 50
	}
	return 100
}

// ListComments lists the comments of pull request number (at most MaxPages pages).
func (c *Client) ListComments(ctx context.Context, repo Repo, number int) ([]Comment, error) {
	var all []Comment
	for p := 1; p <= MaxPages; p++ {
		req, err := c.Target.NewRequest(ctx, http.MethodGet, c.Target.commentsPath(repo, number)+"?"+c.Target.pageQuery(p), nil)
		if err != nil {
			return nil, err
		}
		var page []Comment
		if _, err := c.do(req, &page); err != nil {
			return nil, fmt.Errorf("listing the comments of #%d: %w", number, err)
		}
		all = append(all, page...)
		if len(page) < c.Target.pageSize() {
			break
		}
	}
	return all, nil
}

// CreateComment adds a comment to pull request number.
func (c *Client) CreateComment(ctx context.Context, repo Repo, number int, body string) (Comment, error) {
	req, err := c.Target.NewRequest(ctx, http.MethodPost, c.Target.commentsPath(repo, number), map[string]string{"body": capBody(body)})
	if err != nil {
		return Comment{}, err
	}
	var out Comment
	if _, err := c.do(req, &out); err != nil {
		return Comment{}, fmt.Errorf("commenting on #%d: %w", number, err)
	}
	return out, nil
}

// UpdateComment replaces the body of comment id of pull request number.
func (c *Client) UpdateComment(ctx context.Context, repo Repo, number int, id int64, body string) error {
	method, path := c.Target.commentPath(repo, number, id)
	req, err := c.Target.NewRequest(ctx, method, path, map[string]string{"body": capBody(body)})
	if err != nil {
		return err
	}
	if _, err := c.do(req, nil); err != nil {
		return fmt.Errorf("updating comment %d of #%d: %w", id, number, err)
	}
	return nil
}

// UpsertComment makes body the one comment of pull request number that holds marker (a
// hidden line such as `<!-- gitsync-preview -->`, added to body when missing): the
// first such comment is updated in place, else a new one is created.
func (c *Client) UpsertComment(ctx context.Context, repo Repo, number int, marker, body string) (Comment, error) {
	if !strings.Contains(body, marker) {
		body = marker + "\n" + body
	}
	comments, err := c.ListComments(ctx, repo, number)
	if err != nil {
		return Comment{}, err
	}
	for _, cm := range comments {
		if strings.Contains(cm.Body, marker) {
			if err := c.UpdateComment(ctx, repo, number, cm.ID, body); err != nil {
				return Comment{}, err
			}
			cm.Body = body
			return cm, nil
		}
	}
	return c.CreateComment(ctx, repo, number, body)
}

// capBody cuts a body longer than MaxCommentBytes at a line break.
func capBody(body string) string {
	if len(body) <= MaxCommentBytes {
		return body
	}
	const note = "\n\n… (cut: the comment is longer than the forge accepts)\n"
	cut := body[:MaxCommentBytes-len(note)]
	if i := strings.LastIndexByte(cut, '\n'); i > 0 {
		cut = cut[:i]
	}
	return cut + note
}
