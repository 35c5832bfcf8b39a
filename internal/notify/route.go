package notify

import (
	"fmt"
	"regexp"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// Match reports whether an Alert sends an event: the object is one of its eventSources
// (kind, name or `*`, matchLabels; the Alert's namespace), the severity admits it (`error`:
// Warning events only), the message matches the inclusionList (when set) and none of the
// exclusionList. An error means a regex does not compile.
func Match(alert *gitsyncv1.Alert, ev Event) (bool, error) {
	include, exclude, err := Compile(alert)
	if err != nil {
		return false, err
	}
	if alert.Spec.Suspend || ev.Namespace != alert.Namespace {
		return false, nil
	}
	if alert.Spec.EventSeverity == gitsyncv1.SeverityError && !ev.Warning() {
		return false, nil
	}
	if !SourceMatch(alert, ev) {
		return false, nil
	}
	if len(include) > 0 && !anyMatch(include, ev.Message) {
		return false, nil
	}
	return !anyMatch(exclude, ev.Message), nil
}

// SourceMatch reports whether the event's object is one of the Alert's eventSources.
func SourceMatch(alert *gitsyncv1.Alert, ev Event) bool {
	for _, s := range alert.Spec.EventSources {
		if s.Kind != ev.Kind || (s.Namespace != "" && s.Namespace != ev.Namespace) {
			continue
		}
		if s.Name != "*" && s.Name != ev.Name {
			continue
		}
		if labelsMatch(s.MatchLabels, ev.Labels) {
			return true
		}
	}
	return false
}

// Compile compiles the Alert's inclusion and exclusion regexes.
func Compile(alert *gitsyncv1.Alert) (include, exclude []*regexp.Regexp, err error) {
	if include, err = compileAll(alert.Spec.InclusionList); err != nil {
		return nil, nil, fmt.Errorf("inclusionList: %w", err)
	}
	if exclude, err = compileAll(alert.Spec.ExclusionList); err != nil {
		return nil, nil, fmt.Errorf("exclusionList: %w", err)
	}
	return include, exclude, nil
}

func compileAll(exprs []string) ([]*regexp.Regexp, error) {
	out := make([]*regexp.Regexp, 0, len(exprs))
	for _, e := range exprs {
		re, err := regexp.Compile(e)
		if err != nil {
			return nil, err
		}
		out = append(out, re)
	}
	return out, nil
}

func anyMatch(res []*regexp.Regexp, s string) bool {
	for _, re := range res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

func labelsMatch(want, have map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}
