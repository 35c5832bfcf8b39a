package imagepolicy

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"github.com/Masterminds/semver/v3"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// MaxPatternLength bounds filterTags.pattern (the API caps it too); RE2 matching is
// linear in the tag's length, so the pattern's size is what a tenant could inflate.
const MaxPatternLength = 1024

// ErrInvalid: the policy cannot be used as written (a Stalled condition, not a retry).
var ErrInvalid = errors.New("invalid policy")

// ErrNoMatch: no tag passes the policy.
var ErrNoMatch = errors.New("no tag matches the policy")

// Order names.
const (
	OrderAsc  = "asc"
	OrderDesc = "desc"
)

// Policy is a compiled ImagePolicy: a filter and an ordering.
type Policy struct {
	filter  *regexp.Regexp
	extract string
	better  func(a, b candidate) bool
	parse   func(value string) (any, bool)
}

type candidate struct {
	tag, value string
	parsed     any
}

// Compile checks spec's policy and filterTags and returns the Policy.
func Compile(spec gitsyncv1.ImagePolicySpec) (*Policy, error) {
	p := &Policy{}
	if f := spec.FilterTags; f != nil && f.Pattern != "" {
		if len(f.Pattern) > MaxPatternLength {
			return nil, fmt.Errorf("%w: filterTags.pattern is longer than %d characters", ErrInvalid, MaxPatternLength)
		}
		re, err := regexp.Compile(f.Pattern)
		if err != nil {
			return nil, fmt.Errorf("%w: filterTags.pattern: %v", ErrInvalid, err)
		}
		p.filter, p.extract = re, f.Extract
	}
	choice := spec.Policy
	set := 0
	for _, b := range []bool{choice.SemVer != nil, choice.Alphabetical != nil, choice.Numerical != nil} {
		if b {
			set++
		}
	}
	if set != 1 {
		return nil, fmt.Errorf("%w: policy needs exactly one of semver, alphabetical, numerical", ErrInvalid)
	}
	switch {
	case choice.SemVer != nil:
		c, err := semver.NewConstraint(choice.SemVer.Range)
		if err != nil {
			return nil, fmt.Errorf("%w: semver range %q: %v", ErrInvalid, choice.SemVer.Range, err)
		}
		p.parse = func(v string) (any, bool) {
			ver, err := semver.NewVersion(v)
			if err != nil || !c.Check(ver) {
				return nil, false
			}
			return ver, true
		}
		p.better = func(a, b candidate) bool {
			if c := a.parsed.(*semver.Version).Compare(b.parsed.(*semver.Version)); c != 0 {
				return c > 0
			}
			return a.tag > b.tag
		}
	case choice.Alphabetical != nil:
		desc, err := order(choice.Alphabetical)
		if err != nil {
			return nil, err
		}
		p.parse = func(v string) (any, bool) { return v, true }
		p.better = func(a, b candidate) bool {
			if a.value != b.value {
				return (a.value > b.value) != desc
			}
			return a.tag > b.tag
		}
	case choice.Numerical != nil:
		desc, err := order(choice.Numerical)
		if err != nil {
			return nil, err
		}
		// A value that is not a number is skipped (Flux fails the whole policy on it).
		p.parse = func(v string) (any, bool) {
			f, err := strconv.ParseFloat(v, 64)
			return f, err == nil
		}
		p.better = func(a, b candidate) bool {
			x, y := a.parsed.(float64), b.parsed.(float64)
			if x != y {
				return (x > y) != desc
			}
			return a.tag > b.tag
		}
	}
	return p, nil
}

func order(o *gitsyncv1.OrderPolicy) (desc bool, err error) {
	switch o.Order {
	case "", OrderAsc:
		return false, nil
	case OrderDesc:
		return true, nil
	}
	return false, fmt.Errorf("%w: order %q is neither asc nor desc", ErrInvalid, o.Order)
}

// value is what tag is ordered by: the tag, or filterTags' extract of it (Flux's
// ReplaceAllString over the match, so `$ts`, `${ts}` name the pattern's groups);
// false when the filter drops it.
func (p *Policy) value(tag string) (string, bool) {
	if p.filter == nil {
		return tag, true
	}
	if !p.filter.MatchString(tag) {
		return "", false
	}
	if p.extract == "" {
		return tag, true
	}
	return p.filter.ReplaceAllString(tag, p.extract), true
}

// Latest returns the tag the policy chooses from tags (ErrNoMatch when none passes).
func (p *Policy) Latest(tags []string) (string, error) {
	var best *candidate
	for _, tag := range tags {
		v, ok := p.value(tag)
		if !ok {
			continue
		}
		parsed, ok := p.parse(v)
		if !ok {
			continue
		}
		c := candidate{tag: tag, value: v, parsed: parsed}
		if best == nil || p.better(c, *best) {
			best = &c
		}
	}
	if best == nil {
		return "", ErrNoMatch
	}
	return best.tag, nil
}

// NeedsDigest says whether the chosen tag's digest is looked up now: Always at every
// reconcile, IfNotPresent when the tag changed or no digest is known, Never not at all.
func NeedsDigest(policy string, previous *gitsyncv1.ImageRef, tag string) bool {
	switch policy {
	case gitsyncv1.ReflectAlways:
		return true
	case gitsyncv1.ReflectIfNotPresent:
		return previous == nil || previous.Tag != tag || previous.Digest == ""
	}
	return false
}
