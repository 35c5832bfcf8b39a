// Package substitute replaces ${VAR} references in rendered objects with variables,
// with Flux's post-build substitution (github.com/fluxcd/pkg/kustomize
// SubstituteVariables, run without a cluster client):
//
//   - ${VAR} is the variable's value; ${VAR:=default} and ${VAR:-default} its value or
//     the default when it is not set; $${VAR} is the text ${VAR}, left alone;
//   - an object annotated gitsync.dev/substitute: disabled, or labelled or annotated
//     with Flux's kustomize.toolkit.fluxcd.io/substitute: disabled, is left alone;
//   - strict: a reference to a variable that is not set and has no default is an
//     error naming the variable and the object.
//
// Variables are merged by the caller from inline values and ConfigMap/Secret data
// (Merge); the values that came from Secrets are known (Variables.SecretValues) so
// callers can mask them wherever they land, and they never appear in this package's
// errors.
package substitute

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/fluxcd/pkg/kustomize"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/resource"

	"github.com/fluxcd/pkg/ssa/utils"
	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// namePattern is the shape of a variable name, as Flux requires it.
var namePattern = regexp.MustCompile(`^[_[:alpha:]][_[:alpha:][:digit:]]*$`)

// Source is the data of one ConfigMap or Secret named by spec.postBuild.substituteFrom.
type Source struct {
	// Data maps variable names to values (a Secret's data as strings).
	Data map[string]string
	// Secret is true for a Secret: its values are secret.
	Secret bool
}

// Variables are the values to substitute, and which of them are secret.
type Variables struct {
	values map[string]string
	secret map[string]bool
}

// Merge returns the variables of sources in order (a later source's value wins) and
// then of inline (spec.postBuild.substitute), which wins over every source. Newlines
// are removed from values, as Flux does. A variable is secret when its value came
// from a Secret and was not overridden by a ConfigMap or inline value.
func Merge(inline map[string]string, sources ...Source) *Variables {
	v := &Variables{values: map[string]string{}, secret: map[string]bool{}}
	for _, s := range sources {
		for k, val := range s.Data {
			v.values[k] = strings.ReplaceAll(val, "\n", "")
			v.secret[k] = s.Secret
		}
	}
	for k, val := range inline {
		v.values[k] = strings.ReplaceAll(val, "\n", "")
		v.secret[k] = false
	}
	return v
}

// Values returns a copy of the variables.
func (v *Variables) Values() map[string]string {
	out := make(map[string]string, len(v.values))
	for k, val := range v.values {
		out[k] = val
	}
	return out
}

// SecretValues returns the non-empty values that came from Secrets, sorted and
// without duplicates: the strings a caller masks in logs, events, status and diffs.
func (v *Variables) SecretValues() []string {
	seen := map[string]bool{}
	var out []string
	for k, secret := range v.secret {
		if val := v.values[k]; secret && val != "" && !seen[val] {
			seen[val] = true
			out = append(out, val)
		}
	}
	sort.Strings(out)
	return out
}

// Disabled tells whether obj opts out of substitution: annotated
// gitsync.dev/substitute: disabled, or labelled or annotated with Flux's
// kustomize.toolkit.fluxcd.io/substitute: disabled.
func Disabled(obj *unstructured.Unstructured) bool {
	ann := obj.GetAnnotations()
	return ann[gitsyncv1.SubstituteAnnotation] == gitsyncv1.SubstituteDisabledValue ||
		ann[gitsyncv1.FluxSubstituteAnnotation] == gitsyncv1.SubstituteDisabledValue ||
		obj.GetLabels()[gitsyncv1.FluxSubstituteAnnotation] == gitsyncv1.SubstituteDisabledValue
}

// Objects substitutes vars into every object of objs that is not Disabled, in place.
// Defaults apply even when vars is empty. A variable name that Flux would refuse
// (not ^[_a-zA-Z][_a-zA-Z0-9]*$) is an error; so is a reference to an unset variable
// without a default, naming both. On error objs may be partly substituted.
func Objects(objs []*unstructured.Unstructured, vars *Variables) error {
	if vars == nil {
		vars = Merge(nil)
	}
	for k := range vars.values {
		if !namePattern.MatchString(k) {
			return fmt.Errorf("variable name %q is invalid: it must match %s", k, namePattern)
		}
	}
	// Flux's SubstituteVariables reads the inline variables from a Kustomization;
	// with dry-run it reads nothing else (no client, no ConfigMaps or Secrets).
	substitute := make(map[string]any, len(vars.values))
	for k, val := range vars.values {
		substitute[k] = val
	}
	ks := unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"postBuild": map[string]any{"substitute": substitute}},
	}}
	factory := provider.NewDefaultDepProvider().GetResourceFactory()
	secrets := vars.SecretValues()
	for _, obj := range objs {
		// Only an object with a "$" can change (substitution works on its text): the
		// others skip the conversion to and from kustomize's resources.
		if Disabled(obj) || !hasDollar(obj.Object) {
			continue
		}
		if err := one(factory, ks, obj); err != nil {
			return fmt.Errorf("substituting variables in %s: %w", utils.FmtUnstructured(obj), redact(err, secrets))
		}
	}
	return nil
}

// one substitutes the variables of ks into obj.
func one(factory *resource.Factory, ks unstructured.Unstructured, obj *unstructured.Unstructured) error {
	res, err := factory.FromMap(obj.Object)
	if err != nil {
		return err
	}
	out, err := kustomize.SubstituteVariables(context.Background(), nil, ks, res,
		kustomize.SubstituteWithDryRun(true),
		kustomize.SubstituteWithStrict(true),
		kustomize.SubstituteWithAlways(true))
	if err != nil {
		return missing(err)
	}
	if out == nil {
		return nil // disabled by Flux's label or annotation
	}
	// Through JSON, so that numbers are int64 or float64 as unstructured requires.
	data, err := out.MarshalJSON()
	if err != nil {
		return err
	}
	m := map[string]any{}
	if err := utiljson.Unmarshal(data, &m); err != nil {
		return err
	}
	obj.Object = m
	return nil
}

// strictMissing finds the variable of envsubst's strict-mode error.
var strictMissing = regexp.MustCompile(`variable not set \(strict mode\): "([^"]*)"`)

// missing rewrites envsubst's strict-mode error as "variable X is not set".
func missing(err error) error {
	if m := strictMissing.FindStringSubmatch(err.Error()); m != nil {
		return fmt.Errorf("variable %q is not set and has no default", m[1])
	}
	return err
}

// redact replaces an error that quotes a secret value (a YAML error after the
// substitution may) with one that does not.
func redact(err error, secrets []string) error {
	msg := err.Error()
	for _, s := range secrets {
		if strings.Contains(msg, s) {
			return errors.New("the substituted object is not valid YAML (message withheld: it quotes a secret value)")
		}
	}
	return err
}

// hasDollar tells whether a "$" is in any key or string of v.
func hasDollar(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if strings.Contains(k, "$") || hasDollar(x) {
				return true
			}
		}
	case []any:
		for _, x := range t {
			if hasDollar(x) {
				return true
			}
		}
	case string:
		return strings.Contains(t, "$")
	}
	return false
}
