package preview

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/drift"
	"github.com/gitsync-dev/gitsync/internal/operations"
)

const sha = "0123456789abcdef0123456789abcdef01234567"

func TestWants(t *testing.T) {
	preview := &gitsyncv1.GitRepositoryPreview{ProviderRef: gitsyncv1.LocalObjectReference{Name: "p"}}
	for _, tt := range []struct {
		name string
		spec gitsyncv1.GitRepositorySpec
		req  Request
		want string
	}{
		{"no preview", gitsyncv1.GitRepositorySpec{}, Request{BaseBranch: "main", HeadSHA: sha}, "no spec.preview"},
		{"follows main", gitsyncv1.GitRepositorySpec{Preview: preview, Ref: &gitsyncv1.GitRepositoryRef{Branch: "main"}},
			Request{BaseBranch: "main", HeadSHA: sha}, ""},
		{"other target", gitsyncv1.GitRepositorySpec{Preview: preview, Ref: &gitsyncv1.GitRepositoryRef{Branch: "main"}},
			Request{BaseBranch: "dev", HeadSHA: sha}, `target branch "dev"`},
		{"no ref: any target", gitsyncv1.GitRepositorySpec{Preview: preview}, Request{BaseBranch: "dev", HeadSHA: sha}, ""},
		{"listed targets", gitsyncv1.GitRepositorySpec{Preview: &gitsyncv1.GitRepositoryPreview{TargetBranches: []string{"main", "release"}}},
			Request{BaseBranch: "release", HeadSHA: sha}, ""},
		{"fork", gitsyncv1.GitRepositorySpec{Preview: preview}, Request{BaseBranch: "main", HeadSHA: sha, Fork: true}, "fork"},
		{"fork allowed", gitsyncv1.GitRepositorySpec{Preview: &gitsyncv1.GitRepositoryPreview{Forks: true}},
			Request{BaseBranch: "main", HeadSHA: sha, Fork: true}, ""},
		{"no commit", gitsyncv1.GitRepositorySpec{Preview: preview}, Request{BaseBranch: "main", HeadSHA: "main"}, "no commit"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Wants(&gitsyncv1.GitRepository{Spec: tt.spec}, tt.req)
			if tt.want == "" {
				NewWithT(t).Expect(got).To(BeEmpty())
			} else {
				NewWithT(t).Expect(got).To(ContainSubstring(tt.want))
			}
		})
	}
}

func appDiff(name string, outcomes ...operations.Outcome) operations.AppDiff {
	app := &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name}}
	return operations.AppDiff{App: app, Diff: &operations.Diff{App: app, Rendered: &operations.Rendered{Sensitive: []string{"hunter2"}}, Outcomes: outcomes}}
}

// The comment masks the render's sensitive values, keeps text from closing its code
// blocks, cuts long diffs, and stays under its budget with an "N more" line.
func TestComment(t *testing.T) {
	g := NewWithT(t)
	long := strings.Repeat("+ line\n", 200)
	diffs := []operations.AppDiff{
		appDiff("same", operations.Outcome{Subject: "ConfigMap/team-a/a", Action: drift.Unchanged}),
		appDiff("web",
			operations.Outcome{Subject: "ConfigMap/team-a/web", Action: drift.Configured, Fields: []drift.Field{{Path: "/data/x"}},
				Diff: "-  x: hunter2\n+  x: ```evil\n" + long},
			operations.Outcome{Subject: "Job/team-a/migrate", Action: operations.Failed, Err: "admission says hunter2 `no`"},
			operations.Outcome{Subject: "ClusterRoleBinding/admin", Action: operations.Failed, Forbidden: true, Err: "forbidden"}),
		{App: &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "broken"}}, Err: errors.New("building ./: yaml: line 3")},
	}
	diffs[1].Diff.Hooks = []string{"PreSync Job/team-a/db"}
	body := Comment(Request{Namespace: "team-a", Name: "repo", Number: 1, HeadSHA: sha}, "feature@sha1:"+sha, diffs, nil)
	g.Expect(body).To(HavePrefix(Marker + "\n"))
	g.Expect(body).NotTo(ContainSubstring("hunter2"))
	g.Expect(body).To(ContainSubstring("| team-a/same | 0 | 0 | 0 | 1 | no changes |"))
	g.Expect(body).To(ContainSubstring("| team-a/web | 0 | 1 | 0 | 0 | 2 refused |"))
	g.Expect(body).To(ContainSubstring("| team-a/broken | - | - | - | - | error |"))
	g.Expect(body).NotTo(ContainSubstring("#### team-a/same"))
	g.Expect(body).To(ContainSubstring("**Refused by RBAC:** `ClusterRoleBinding/admin`"))
	g.Expect(body).To(ContainSubstring("**Refused by the API server:** `Job/team-a/migrate`: `admission says *** 'no'`"))
	g.Expect(body).To(ContainSubstring("Hooks a sync would run: `PreSync Job/team-a/db`"))
	g.Expect(body).To(ContainSubstring("**Render or dry-run failed:** `building ./: yaml: line 3`"))
	g.Expect(body).To(ContainSubstring("… 122 more lines\n"))
	g.Expect(strings.Count(body, "```")).To(Equal(2), "the diff's ``` cannot close the block")
	state, desc := Summary(diffs, nil)
	g.Expect(state).To(Equal("failure"))
	g.Expect(desc).To(Equal("2 of 3 Applications would fail: team-a/web, team-a/broken"))

	// Many Applications: the comment stops at its budget and counts the rest.
	var many []operations.AppDiff
	for i := range 200 {
		many = append(many, appDiff(fmt.Sprintf("app-%03d", i), operations.Outcome{Subject: "ConfigMap/team-a/c", Action: drift.Configured,
			Fields: []drift.Field{{Path: "/data/x"}}, Diff: strings.Repeat("+ a longer line of the diff\n", 60)}))
	}
	body = Comment(Request{Namespace: "team-a", Name: "repo", Number: 1, HeadSHA: sha}, "", many, nil)
	g.Expect(len(body)).To(BeNumerically("<", 60000))
	g.Expect(body).To(MatchRegexp(`\n\d+ more Applications with changes or errors not shown`))
	g.Expect(body).To(ContainSubstring("gitsync diff source repo -n team-a --revision " + sha))
	state, desc = Summary(many, nil)
	g.Expect(state).To(Equal("success"))
	g.Expect(desc).To(Equal("200 of 200 Applications would change"))

	body = Comment(Request{HeadSHA: sha}, "", nil, errors.New("fetching: repository not found"))
	g.Expect(body).To(ContainSubstring("**The preview failed:** `fetching: repository not found`"))
}
