package celhealth

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func widget(status map[string]any) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w"},
	}}
	if status != nil {
		o.Object["status"] = status
	}
	return o
}

func TestEvaluate(t *testing.T) {
	checks, err := Compile([]Check{{
		APIVersion: "example.com/v1", Kind: "Widget",
		Current:    "self.status.ready == true",
		InProgress: "status.phase == 'Provisioning'",
		Failed:     "has(status.error) && status.error != ''",
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		status map[string]any
		want   Status
	}{
		{"no status yet", nil, InProgress},
		{"ready", map[string]any{"ready": true}, Current},
		{"provisioning", map[string]any{"phase": "Provisioning", "ready": false}, InProgress},
		{"failed wins over ready", map[string]any{"ready": true, "error": "quota exceeded"}, Failed},
		{"not ready, nothing else", map[string]any{"ready": false}, InProgress},
	} {
		got, err := checks.Evaluate(widget(c.status))
		if err != nil || got != c.want {
			t.Errorf("%s: got %s, %v; want %s", c.name, got, err, c.want)
		}
	}
	if !checks.Has(widget(nil).GroupVersionKind()) {
		t.Error("Has(Widget) = false")
	}
}

func TestCompileErrorsAreClear(t *testing.T) {
	for _, c := range []struct {
		check Check
		want  string
	}{
		{Check{APIVersion: "example.com/v1", Kind: "Widget", Current: "status.ready =="}, "healthChecks[0] (Widget) current:"},
		{Check{APIVersion: "example.com/v1", Kind: "Widget", Current: "'yes'"}, "must be a bool"},
		{Check{APIVersion: "example.com/v1", Kind: "Widget"}, "current is required"},
		{Check{APIVersion: "a/b/c", Kind: "Widget", Current: "true"}, `apiVersion "a/b/c"`},
	} {
		_, err := Compile([]Check{c.check})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want %q", c.check, err, c.want)
		}
	}
}

func TestEvaluateNonBoolAtRuntime(t *testing.T) {
	checks, err := Compile([]Check{{APIVersion: "example.com/v1", Kind: "Widget", Current: "status.ready"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := checks.Evaluate(widget(map[string]any{"ready": "yes"})); err == nil || !strings.Contains(err.Error(), "not a bool") {
		t.Fatalf("err = %v", err)
	}
}
