package appset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"text/template"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// MaxStringBytes bounds one templated string's output.
const MaxStringBytes = 64 << 10

// Renderer executes one ApplicationSet's template; its parsed templates are kept for the
// parameter sets that follow.
type Renderer struct {
	set    *gitsyncv1.ApplicationSet
	tmpl   any
	parsed map[string]*template.Template
}

// NewRenderer prepares set's template.
func NewRenderer(set *gitsyncv1.ApplicationSet) (*Renderer, error) {
	raw, err := json.Marshal(set.Spec.Template)
	if err != nil {
		return nil, fmt.Errorf("encoding the template: %w", err)
	}
	var tmpl any
	if err := json.Unmarshal(raw, &tmpl); err != nil {
		return nil, fmt.Errorf("decoding the template: %w", err)
	}
	return &Renderer{set: set, tmpl: tmpl, parsed: map[string]*template.Template{}}, nil
}

// Application makes the Application of one parameter set: every string of the template
// executed with p (a missing key is an error), decoded strictly back into the types, and
// checked (name, labels, annotations). It carries the set's label and owner reference.
func (r *Renderer) Application(p Params) (*gitsyncv1.Application, error) {
	out, err := r.walk(r.tmpl, p, "template")
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encoding the templated Application: %w", err)
	}
	var t gitsyncv1.ApplicationSetTemplate
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("the templated Application does not fit the Application's types: %w", err)
	}
	if err := validate(&t); err != nil {
		return nil, err
	}
	set := r.set
	app := &gitsyncv1.Application{
		TypeMeta: metav1.TypeMeta{APIVersion: gitsyncv1.GroupVersion.String(), Kind: gitsyncv1.ApplicationKind},
		ObjectMeta: metav1.ObjectMeta{
			Name: t.Metadata.Name, Namespace: set.Namespace,
			Labels: t.Metadata.Labels, Annotations: t.Metadata.Annotations,
		},
		Spec: t.Spec,
	}
	if app.Labels == nil {
		app.Labels = map[string]string{}
	}
	app.Labels[gitsyncv1.ApplicationSetLabel] = set.Name
	app.Spec.PinnedRevision = ""
	yes := true
	app.OwnerReferences = []metav1.OwnerReference{{APIVersion: gitsyncv1.GroupVersion.String(), Kind: gitsyncv1.ApplicationSetKind,
		Name: set.Name, UID: set.UID, Controller: &yes, BlockOwnerDeletion: &yes}}
	return app, nil
}

// walk executes every string of v (map keys included) with p.
func (r *Renderer) walk(v any, p Params, at string) (any, error) {
	switch t := v.(type) {
	case string:
		return r.execute(t, p, at)
	case map[string]any:
		out := make(map[string]any, len(t))
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			nk, err := r.execute(k, p, at+"."+k)
			if err != nil {
				return nil, err
			}
			nv, err := r.walk(t[k], p, at+"."+k)
			if err != nil {
				return nil, err
			}
			out[nk] = nv
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			nv, err := r.walk(x, p, fmt.Sprintf("%s[%d]", at, i))
			if err != nil {
				return nil, err
			}
			out[i] = nv
		}
		return out, nil
	}
	return v, nil
}

func (r *Renderer) execute(s string, p Params, at string) (string, error) {
	if !strings.Contains(s, "{{") {
		return s, nil
	}
	tmpl, ok := r.parsed[s]
	if !ok {
		var err error
		tmpl, err = template.New(at).Option("missingkey=error").Parse(s)
		if err != nil {
			return "", fmt.Errorf("%s: parsing the template: %w", at, err)
		}
		r.parsed[s] = tmpl
	}
	var b capped
	if err := tmpl.Execute(&b, map[string]any(p)); err != nil {
		return "", fmt.Errorf("%s: %w", at, err)
	}
	return b.String(), nil
}

// capped is a buffer that refuses to grow past MaxStringBytes.
type capped struct{ bytes.Buffer }

var errTooLong = fmt.Errorf("the output is longer than %d bytes", MaxStringBytes)

func (c *capped) Write(p []byte) (int, error) {
	if c.Len()+len(p) > MaxStringBytes {
		return 0, errTooLong
	}
	return c.Buffer.Write(p)
}

// validate checks what the API server would refuse of the metadata, with the template's
// words: a name that is a DNS-1123 label (it is a label value of every object the
// Application applies), qualified label and annotation keys, label values.
func validate(t *gitsyncv1.ApplicationSetTemplate) error {
	var errs []error
	if msgs := validation.IsDNS1123Label(t.Metadata.Name); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("metadata.name %q: %s", t.Metadata.Name, strings.Join(msgs, "; ")))
	}
	for k, v := range t.Metadata.Labels {
		for _, m := range append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...) {
			errs = append(errs, fmt.Errorf("metadata.labels[%q]: %s", k, m))
		}
	}
	for k := range t.Metadata.Annotations {
		for _, m := range validation.IsQualifiedName(k) {
			errs = append(errs, fmt.Errorf("metadata.annotations[%q]: %s", k, m))
		}
	}
	if len(t.Spec.Sources) == 0 && t.Spec.SourceRef.Name == "" {
		errs = append(errs, errors.New("spec.sourceRef.name is empty"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("the templated Application is not valid: %w", errors.Join(errs...))
	}
	return nil
}

// Applications makes the Applications of all parameter sets: a name made twice is an error.
func Applications(set *gitsyncv1.ApplicationSet, sets []Params) ([]*gitsyncv1.Application, error) {
	r, err := NewRenderer(set)
	if err != nil {
		return nil, err
	}
	seen := map[string]int{}
	out := make([]*gitsyncv1.Application, 0, len(sets))
	for i, p := range sets {
		app, err := r.Application(p)
		if err != nil {
			return nil, fmt.Errorf("parameter set %d (%s): %w", i, summary(p), err)
		}
		if j, dup := seen[app.Name]; dup {
			return nil, fmt.Errorf("parameter sets %d and %d both make the Application %q: make the template's name tell them apart", j, i, app.Name)
		}
		seen[app.Name] = i
		out = append(out, app)
	}
	return out, nil
}

// summary is a short view of p for messages.
func summary(p Params) string {
	s := strings.Join(Flatten(p), ", ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
