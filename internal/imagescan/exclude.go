package imagescan

import (
	"fmt"
	"regexp"
)

// Bounds on a tenant's exclusionList (the API also caps its length).
const (
	MaxExclusions       = 25
	MaxExclusionPattern = 1024
)

// DefaultExclusions drop cosign's signature tags, as Flux does.
var DefaultExclusions = []string{`^.*\.sig$`}

// compileExclusions compiles patterns (RE2: matching is linear in the tag's length).
func compileExclusions(patterns []string) ([]*regexp.Regexp, error) {
	if len(patterns) > MaxExclusions {
		return nil, fmt.Errorf("exclusionList holds %d patterns, more than %d", len(patterns), MaxExclusions)
	}
	out := make([]*regexp.Regexp, 0, len(patterns))
	for i, p := range patterns {
		if len(p) > MaxExclusionPattern {
			return nil, fmt.Errorf("exclusionList[%d] is longer than %d characters", i, MaxExclusionPattern)
		}
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("exclusionList[%d]: %w", i, err)
		}
		out = append(out, re)
	}
	return out, nil
}

func excluded(tag string, res []*regexp.Regexp) bool {
	for _, re := range res {
		if re.MatchString(tag) {
			return true
		}
	}
	return false
}
