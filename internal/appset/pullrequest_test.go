package appset

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/forge"
)

func TestPullRequestParams(t *testing.T) {
	prs := []forge.PullRequest{
		{Number: 12, Branch: "feature/Login_Page", HeadSHA: "0123456789abcdef0123456789abcdef01234567", TargetBranch: "main",
			Labels: []string{"preview", "team-a"}},
		{Number: 13, Branch: "from-a-fork", HeadSHA: "ffffffffffffffffffffffffffffffffffffffff", TargetBranch: "main", Fork: true},
		{Number: 14, Branch: "hotfix", HeadSHA: "abc", TargetBranch: "release-1"},
	}
	sets, err := PullRequestParams(prs, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) != 2 {
		t.Fatalf("want 2 sets (the fork's left out), got %d: %v", len(sets), sets)
	}
	want := []string{"branch=feature/Login_Page", "branch_slug=feature-login-page", "head_sha=0123456789abcdef0123456789abcdef01234567",
		"head_short_sha=01234567", "labels.0=preview", "labels.1=team-a", "number=12", "target_branch=main"}
	if got := Flatten(sets[0]); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("params of #12:\n got %v\nwant %v", got, want)
	}
	if got := Flatten(sets[1]); strings.Join(got, " ") != "branch=hotfix branch_slug=hotfix head_sha=abc head_short_sha=abc number=14 target_branch=release-1" {
		t.Errorf("params of #14: %v", got)
	}
}

func TestPullRequestParamsCap(t *testing.T) {
	prs := []forge.PullRequest{{Number: 1, Branch: "a"}, {Number: 2, Branch: "b"}, {Number: 3, Branch: "c", Fork: true}}
	if _, err := PullRequestParams(prs, 2); err != nil {
		t.Fatalf("two pull requests (and a fork) within a cap of 2: %v", err)
	}
	if _, err := PullRequestParams(prs, 1); !errors.Is(err, ErrTooMany) {
		t.Fatalf("two pull requests over a cap of 1: want ErrTooMany, got %v", err)
	}
}

func TestBranchSlug(t *testing.T) {
	long := strings.Repeat("ab-", 30)
	for _, c := range []struct{ branch, want string }{
		{"main", "main"},
		{"feature/JIRA-123_new__thing", "feature-jira-123-new-thing"},
		{"--x--", "x"},
		{"dependabot/npm_and_yarn/lodash-4.17.21", "dependabot-npm-and-yarn-lodash-4-17-21"},
		{"über/straße", "ber-stra-e"},
		{"___", "pr-7"},
		{long, strings.TrimRight(strings.Repeat("ab-", 17)[:MaxBranchSlug], "-")},
	} {
		got := BranchSlug(c.branch, "7")
		if got != c.want {
			t.Errorf("BranchSlug(%q) = %q, want %q", c.branch, got, c.want)
		}
		if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
			t.Errorf("BranchSlug(%q) = %q is not a DNS label: %v", c.branch, got, errs)
		}
	}
}

// The generator's sets go through the template like any other's: a pull request's
// Application named by its number and slug.
func TestPullRequestGeneratorTemplate(t *testing.T) {
	sets, err := PullRequestParams([]forge.PullRequest{{Number: 5, Branch: "Fix/Typo", HeadSHA: "1234567890", TargetBranch: "main"}}, 10)
	if err != nil {
		t.Fatal(err)
	}
	in := Inputs{PullRequests: func(context.Context, *gitsyncv1.PullRequestGenerator) ([]Params, error) { return sets, nil }}
	gens := []gitsyncv1.ApplicationSetGenerator{{ApplicationSetBaseGenerator: gitsyncv1.ApplicationSetBaseGenerator{
		PullRequest: &gitsyncv1.PullRequestGenerator{ProviderRef: gitsyncv1.LocalObjectReference{Name: "forge"}, Repository: "acme/app"}}}}
	got, err := Generate(context.Background(), gens, in)
	if err != nil {
		t.Fatal(err)
	}
	set := &gitsyncv1.ApplicationSet{}
	set.Name, set.Namespace = "previews", "team"
	set.Spec.Generators = gens
	set.Spec.Template.Metadata.Name = "pr-{{ .number }}-{{ .branch_slug }}"
	set.Spec.Template.Spec.SourceRef = gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "pr-{{ .number }}"}
	set.Spec.Template.Spec.Path = "deploy/{{ .head_short_sha }}"
	apps, err := Applications(set, got)
	if err != nil {
		t.Fatal(err)
	}
	if len(apps) != 1 || apps[0].Name != "pr-5-fix-typo" || apps[0].Spec.SourceRef.Name != "pr-5" || apps[0].Spec.Path != "deploy/12345678" {
		t.Fatalf("unexpected Applications: %+v", apps)
	}
}
