package imagepolicy_test

import (
	"errors"
	"testing"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/imagepolicy"
)

func TestLatest(t *testing.T) {
	semverRange := func(r string) gitsyncv1.ImagePolicyChoice {
		return gitsyncv1.ImagePolicyChoice{SemVer: &gitsyncv1.SemVerPolicy{Range: r}}
	}
	alpha := func(o string) gitsyncv1.ImagePolicyChoice {
		return gitsyncv1.ImagePolicyChoice{Alphabetical: &gitsyncv1.OrderPolicy{Order: o}}
	}
	num := func(o string) gitsyncv1.ImagePolicyChoice {
		return gitsyncv1.ImagePolicyChoice{Numerical: &gitsyncv1.OrderPolicy{Order: o}}
	}
	flux := &gitsyncv1.TagFilter{Pattern: `^main-[a-f0-9]+-(?P<ts>[0-9]+)`, Extract: "$ts"}
	cases := []struct {
		name   string
		policy gitsyncv1.ImagePolicyChoice
		filter *gitsyncv1.TagFilter
		tags   []string
		want   string
		err    error
	}{
		{"semver highest in range", semverRange(">=1.0.0 <2.0.0"), nil, []string{"0.9.0", "1.0.0", "1.4.2", "1.10.0", "2.0.0", "latest"}, "1.10.0", nil},
		{"semver with v prefix", semverRange("^1.2"), nil, []string{"v1.2.0", "v1.3.1", "v2.0.0"}, "v1.3.1", nil},
		{"semver outside the range", semverRange(">=3.0.0"), nil, []string{"1.0.0", "2.0.0"}, "", imagepolicy.ErrNoMatch},
		{"semver pre-releases only when asked", semverRange(">=1.0.0-0"), nil, []string{"1.0.0", "1.1.0-rc.1"}, "1.1.0-rc.1", nil},
		{"alphabetical asc", alpha(""), nil, []string{"RELEASE.2024-01-01", "RELEASE.2024-03-01", "RELEASE.2023-12-31"}, "RELEASE.2024-03-01", nil},
		{"alphabetical desc", alpha("desc"), nil, []string{"b", "a", "c"}, "a", nil},
		{"numerical with extract (Flux's guide)", num("asc"), flux,
			[]string{"main-fc8b10b8-1700000009", "main-a1b2c3d4-1700000100", "main-deadbeef-999", "feature-x-1800000000", "latest"}, "main-a1b2c3d4-1700000100", nil},
		{"numerical desc", num("desc"), nil, []string{"10", "9", "100", "x"}, "9", nil},
		{"alphabetical with extract", alpha("asc"), &gitsyncv1.TagFilter{Pattern: `^(?P<branch>[a-z]+)-(?P<date>\d{8})$`, Extract: "${date}"},
			[]string{"zeta-20240101", "alpha-20240301", "beta-20231231", "noise"}, "alpha-20240301", nil},
		{"filter without extract keeps the tag", semverRange("*"), &gitsyncv1.TagFilter{Pattern: `^1\.`}, []string{"1.2.0", "2.0.0"}, "1.2.0", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := imagepolicy.Compile(gitsyncv1.ImagePolicySpec{Policy: c.policy, FilterTags: c.filter})
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Latest(c.tags)
			if !errors.Is(err, c.err) || got != c.want {
				t.Fatalf("Latest = %q, %v; want %q, %v", got, err, c.want, c.err)
			}
		})
	}
}

func TestCompileRefuses(t *testing.T) {
	for name, spec := range map[string]gitsyncv1.ImagePolicySpec{
		"no policy":   {},
		"two":         {Policy: gitsyncv1.ImagePolicyChoice{SemVer: &gitsyncv1.SemVerPolicy{Range: "*"}, Numerical: &gitsyncv1.OrderPolicy{}}},
		"bad range":   {Policy: gitsyncv1.ImagePolicyChoice{SemVer: &gitsyncv1.SemVerPolicy{Range: "not a range"}}},
		"bad pattern": {Policy: gitsyncv1.ImagePolicyChoice{Alphabetical: &gitsyncv1.OrderPolicy{}}, FilterTags: &gitsyncv1.TagFilter{Pattern: "("}},
		"bad order":   {Policy: gitsyncv1.ImagePolicyChoice{Alphabetical: &gitsyncv1.OrderPolicy{Order: "up"}}},
	} {
		if _, err := imagepolicy.Compile(spec); !errors.Is(err, imagepolicy.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
}

func TestNeedsDigest(t *testing.T) {
	prev := &gitsyncv1.ImageRef{Tag: "1.0.0", Digest: "sha256:abc"}
	cases := []struct {
		policy string
		prev   *gitsyncv1.ImageRef
		tag    string
		want   bool
	}{
		{gitsyncv1.ReflectNever, nil, "1.0.0", false},
		{"", nil, "1.0.0", false},
		{gitsyncv1.ReflectAlways, prev, "1.0.0", true},
		{gitsyncv1.ReflectIfNotPresent, prev, "1.0.0", false},
		{gitsyncv1.ReflectIfNotPresent, prev, "1.1.0", true},
		{gitsyncv1.ReflectIfNotPresent, nil, "1.0.0", true},
	}
	for _, c := range cases {
		if got := imagepolicy.NeedsDigest(c.policy, c.prev, c.tag); got != c.want {
			t.Errorf("NeedsDigest(%q, %v, %q) = %v", c.policy, c.prev, c.tag, got)
		}
	}
}
