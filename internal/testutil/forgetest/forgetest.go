// Package forgetest is an in-process emulator of the REST endpoints of GitHub, GitLab
// and Gitea that internal/forge calls (commit statuses, pull-request comments, open pull
// requests), recording every call, for tests.
package forgetest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Forge types, as a Provider's spec.type names them.
const (
	GitHub = "github"
	GitLab = "gitlab"
	Gitea  = "gitea"
)

// Call is one request the emulator answered.
type Call struct {
	Method, Path string
	Code         int
}

// Status is a commit status as set (GitLab's name is kept in Context, its state as sent).
type Status struct {
	Repo, SHA, State, Context, Description, TargetURL string
}

// Comment is a comment of a pull request.
type Comment struct {
	ID     int64
	Repo   string
	Number int
	Body   string
	// Edits counts the updates of the comment.
	Edits int
}

// PullRequest is an open pull request the emulator lists.
type PullRequest struct {
	Repo         string
	Number       int
	Branch, SHA  string
	TargetBranch string
	Labels       []string
	// ForkRepo names the head's repository when it is a fork ("" when the same repo).
	ForkRepo string
}

// Server emulates one forge of Kind, accepting Token.
type Server struct {
	Kind, Token string
	// URL is the address a Provider's spec.address takes (GitHub: the API root; GitLab
	// and Gitea: the server's URL).
	URL string

	mu       sync.Mutex
	calls    []Call
	statuses []Status
	comments []*Comment
	pulls    []PullRequest
	nextID   int64
	// Fail, when set, answers every request with this status code.
	fail int
}

// New starts an emulator of kind (GitHub, GitLab or Gitea) closed when the test ends.
func New(t testing.TB, kind, token string) *Server {
	t.Helper()
	s := &Server{Kind: kind, Token: token, nextID: 1000}
	srv := httptest.NewServer(s.mux())
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// FailWith makes every following request answer code (0: normal again).
func (s *Server) FailWith(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = code
}

// AddPullRequest adds an open pull request to list.
func (s *Server) AddPullRequest(pr PullRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pulls = append(s.pulls, pr)
}

// ClosePullRequest closes the open pull request number of repo: it is listed no more.
func (s *Server) ClosePullRequest(repo string, number int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, pr := range s.pulls {
		if pr.Repo == repo && pr.Number == number {
			s.pulls = append(s.pulls[:i:i], s.pulls[i+1:]...)
			return
		}
	}
}

// Calls returns the requests answered so far.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Statuses returns the commit statuses set so far, in order.
func (s *Server) Statuses() []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Status(nil), s.statuses...)
}

// Comments returns copies of the comments of repo's pull request number.
func (s *Server) Comments(repo string, number int) []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Comment
	for _, c := range s.comments {
		if c.Repo == repo && c.Number == number {
			out = append(out, *c)
		}
	}
	return out
}

// AddComment adds a comment (someone else's) to a pull request.
func (s *Server) AddComment(repo string, number int, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	s.comments = append(s.comments, &Comment{ID: s.nextID, Repo: repo, Number: number, Body: body})
}

func (s *Server) prefix() string {
	switch s.Kind {
	case GitLab:
		return "/api/v4/projects/{project}"
	case Gitea:
		return "/api/v1/repos/{owner}/{repo}"
	}
	return "/repos/{owner}/{repo}"
}

func (s *Server) mux() http.Handler {
	m := http.NewServeMux()
	p := s.prefix()
	m.HandleFunc("POST "+p+"/statuses/{sha}", s.setStatus)
	if s.Kind == GitLab {
		m.HandleFunc("GET "+p+"/merge_requests/{number}/notes", s.listComments)
		m.HandleFunc("POST "+p+"/merge_requests/{number}/notes", s.createComment)
		m.HandleFunc("PUT "+p+"/merge_requests/{number}/notes/{id}", s.updateComment)
		m.HandleFunc("GET "+p+"/merge_requests", s.listPulls)
	} else {
		m.HandleFunc("GET "+p+"/issues/{number}/comments", s.listComments)
		m.HandleFunc("POST "+p+"/issues/{number}/comments", s.createComment)
		m.HandleFunc("PATCH "+p+"/issues/comments/{id}", s.updateComment)
		m.HandleFunc("GET "+p+"/pulls", s.listPulls)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &recorder{ResponseWriter: w, code: http.StatusOK}
		s.mu.Lock()
		fail := s.fail
		s.mu.Unlock()
		switch {
		case !s.authorized(r):
			http.Error(rec, `{"message":"Bad credentials"}`, http.StatusUnauthorized)
		case fail != 0:
			http.Error(rec, `{"message":"failing as told"}`, fail)
		default:
			m.ServeHTTP(rec, r)
		}
		s.mu.Lock()
		s.calls = append(s.calls, Call{Method: r.Method, Path: r.URL.EscapedPath(), Code: rec.code})
		s.mu.Unlock()
	})
}

type recorder struct {
	http.ResponseWriter
	code int
}

func (r *recorder) WriteHeader(code int) { r.code = code; r.ResponseWriter.WriteHeader(code) }

// authorized checks the forge's own authentication header.
func (s *Server) authorized(r *http.Request) bool {
	switch s.Kind {
	case GitLab:
		return r.Header.Get("PRIVATE-TOKEN") == s.Token
	case Gitea:
		return r.Header.Get("Authorization") == "token "+s.Token
	}
	return r.Header.Get("Authorization") == "Bearer "+s.Token
}

// repoOf names the request's repository as owner/repo (GitLab: the project's path).
func (s *Server) repoOf(r *http.Request) string {
	if s.Kind == GitLab {
		return r.PathValue("project")
	}
	return r.PathValue("owner") + "/" + r.PathValue("repo")
}

func (s *Server) setStatus(w http.ResponseWriter, r *http.Request) {
	var body struct {
		State, Context, Name, Description string
		TargetURL                         string `json:"target_url"`
	}
	if !decode(w, r, &body) {
		return
	}
	if body.Context == "" {
		body.Context = body.Name
	}
	if body.State == "" || body.Context == "" {
		http.Error(w, `{"message":"state and context are required"}`, http.StatusUnprocessableEntity)
		return
	}
	s.mu.Lock()
	s.statuses = append(s.statuses, Status{Repo: s.repoOf(r), SHA: r.PathValue("sha"), State: body.State, Context: body.Context,
		Description: body.Description, TargetURL: body.TargetURL})
	s.mu.Unlock()
	reply(w, http.StatusCreated, map[string]any{"state": body.State, "context": body.Context})
}

func (s *Server) listComments(w http.ResponseWriter, r *http.Request) {
	number, _ := strconv.Atoi(r.PathValue("number"))
	size := 30
	if v := r.URL.Query().Get("per_page"); v != "" {
		size, _ = strconv.Atoi(v)
	}
	if v := r.URL.Query().Get("limit"); v != "" {
		size, _ = strconv.Atoi(v)
	}
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	page = max(page, 1)
	all := s.Comments(s.repoOf(r), number)
	out := []map[string]any{}
	for i := (page - 1) * size; i < len(all) && i < page*size; i++ {
		out = append(out, map[string]any{"id": all[i].ID, "body": all[i].Body})
	}
	reply(w, http.StatusOK, out)
}

func (s *Server) createComment(w http.ResponseWriter, r *http.Request) {
	var body struct{ Body string }
	if !decode(w, r, &body) {
		return
	}
	number, _ := strconv.Atoi(r.PathValue("number"))
	s.mu.Lock()
	s.nextID++
	c := &Comment{ID: s.nextID, Repo: s.repoOf(r), Number: number, Body: body.Body}
	s.comments = append(s.comments, c)
	s.mu.Unlock()
	reply(w, http.StatusCreated, map[string]any{"id": c.ID, "body": c.Body})
}

func (s *Server) updateComment(w http.ResponseWriter, r *http.Request) {
	var body struct{ Body string }
	if !decode(w, r, &body) {
		return
	}
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	repo := s.repoOf(r)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.comments {
		if c.ID == id && c.Repo == repo {
			c.Body = body.Body
			c.Edits++
			reply(w, http.StatusOK, map[string]any{"id": c.ID, "body": c.Body})
			return
		}
	}
	http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
}

func (s *Server) listPulls(w http.ResponseWriter, r *http.Request) {
	repo := s.repoOf(r)
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	var labels []string
	if v := r.URL.Query().Get("labels"); v != "" {
		labels = strings.Split(v, ",")
	}
	s.mu.Lock()
	var out []any
	for _, pr := range s.pulls {
		if pr.Repo != repo || page > 1 || !hasAll(pr.Labels, labels) {
			continue
		}
		out = append(out, s.pullJSON(pr))
	}
	s.mu.Unlock()
	if out == nil {
		out = []any{}
	}
	reply(w, http.StatusOK, out)
}

// pullJSON is a pull request as the forge's API spells it (the fields gitsync reads and
// a few around them).
func (s *Server) pullJSON(pr PullRequest) any {
	head := pr.Repo
	if pr.ForkRepo != "" {
		head = pr.ForkRepo
	}
	if s.Kind == GitLab {
		src := int64(1)
		if pr.ForkRepo != "" {
			src = 2
		}
		labels := pr.Labels
		if labels == nil {
			labels = []string{}
		}
		return map[string]any{"iid": pr.Number, "id": 9000 + pr.Number, "state": "opened", "source_branch": pr.Branch,
			"target_branch": pr.TargetBranch, "sha": pr.SHA, "labels": labels, "source_project_id": src, "target_project_id": 1,
			"title": fmt.Sprintf("MR %d", pr.Number)}
	}
	labels := []map[string]any{}
	for i, l := range pr.Labels {
		labels = append(labels, map[string]any{"id": i + 1, "name": l})
	}
	return map[string]any{"number": pr.Number, "state": "open", "title": fmt.Sprintf("PR %d", pr.Number), "labels": labels,
		"head": map[string]any{"ref": pr.Branch, "sha": pr.SHA, "repo": map[string]any{"full_name": head}},
		"base": map[string]any{"ref": pr.TargetBranch, "repo": map[string]any{"full_name": pr.Repo}}}
}

func hasAll(have, want []string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			found = found || h == w
		}
		if !found {
			return false
		}
	}
	return true
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	data, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err == nil {
		err = json.Unmarshal(data, v)
	}
	if err != nil {
		http.Error(w, `{"message":"Problems parsing JSON"}`, http.StatusBadRequest)
		return false
	}
	return true
}

func reply(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
