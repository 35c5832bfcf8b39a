package helm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// ErrSchema is values that a chart's values.schema.json refuses.
var ErrSchema = errors.New("values don't meet the chart's schema")

// ValidateSchema checks vals (coalesced, as rendered) against the values.schema.json of c
// and of each subchart that has values, as Helm does, with two differences: the error
// names the failing paths and the constraints (`/image/tag: pattern`), never the values
// (which may come from a Secret), and a $ref to anything but the schema itself (http,
// https, file) is refused instead of fetched. (Helm's ValidateAgainstSchema quotes values
// and fetches external $refs with a plain HTTP client.)
func ValidateSchema(c *chart.Chart, vals common.Values) error {
	var problems []string
	validateSchema(c, vals, c.Name(), &problems)
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrSchema, strings.Join(problems, "; "))
	}
	return nil
}

func validateSchema(c *chart.Chart, vals map[string]any, name string, problems *[]string) {
	if len(c.Schema) > 0 {
		for _, p := range schemaProblems(c.Schema, vals) {
			*problems = append(*problems, "chart "+name+": "+p)
		}
	}
	for _, sub := range c.Dependencies() {
		raw, ok := vals[sub.Name()]
		if !ok || raw == nil {
			continue
		}
		subVals, ok := raw.(map[string]any)
		if !ok {
			if cv, isValues := raw.(common.Values); isValues {
				subVals = cv
			} else {
				*problems = append(*problems, fmt.Sprintf("chart %s/%s: values are not a map", name, sub.Name()))
				continue
			}
		}
		validateSchema(sub, subVals, name+"/"+sub.Name(), problems)
	}
}

const schemaURL = "file:///values.schema.json"

// offlineLoader refuses every $ref that leaves the schema document; a urn: is allowed
// and means "anything", as in Helm (nothing is fetched for it).
type offlineLoader struct{}

func (offlineLoader) Load(url string) (any, error) {
	if strings.HasPrefix(url, "urn:") {
		return true, nil
	}
	return nil, fmt.Errorf("external $ref %s refused: a chart's schema may only refer to itself", url)
}

// schemaProblems validates vals against schema and lists the failures without values.
func schemaProblems(schema []byte, vals map[string]any) []string {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return []string{"values.schema.json is not JSON"}
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(offlineLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return []string{"values.schema.json: " + err.Error()}
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		return []string{"values.schema.json: " + strings.ReplaceAll(err.Error(), schemaURL, "values.schema.json")}
	}
	// The validator wants JSON types: round-trip through the values' own JSON form.
	inst, err := jsonValue(vals)
	if err != nil {
		return []string{"values cannot be checked against the schema"}
	}
	err = sch.Validate(inst)
	var ve *jsonschema.ValidationError
	if err == nil {
		return nil
	}
	if !errors.As(err, &ve) {
		return []string{"values cannot be checked against the schema"}
	}
	seen := map[string]bool{}
	var out []string
	collect(ve, seen, &out)
	sort.Strings(out)
	return out
}

// collect lists the leaves of a validation error as `path: keyword` (and, for required,
// the missing property names, which come from the schema).
func collect(e *jsonschema.ValidationError, seen map[string]bool, out *[]string) {
	if len(e.Causes) > 0 {
		for _, c := range e.Causes {
			collect(c, seen, out)
		}
		return
	}
	path := "/" + strings.Join(e.InstanceLocation, "/")
	keyword := "invalid"
	if kp := e.ErrorKind.KeywordPath(); len(kp) > 0 {
		keyword = kp[len(kp)-1]
	}
	if r, ok := e.ErrorKind.(*kind.Required); ok {
		keyword = "required (" + strings.Join(r.Missing, ", ") + ")"
	}
	line := path + ": " + keyword
	if !seen[line] {
		seen[line] = true
		*out = append(*out, line)
	}
}

// jsonValue is v as the validator's JSON types (numbers as json.Number).
func jsonValue(v map[string]any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(data))
}
