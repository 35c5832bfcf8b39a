package celhealth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// literal is a CEL list literal of n ints.
func literal(n int) string {
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprint(i)
	}
	return "[" + strings.Join(items, ",") + "]"
}

// big is a Widget whose spec holds n items and a string of size bytes.
func big(n, size int) *unstructured.Unstructured {
	items := make([]any, n)
	for i := range items {
		items[i] = int64(i)
	}
	o := widget(map[string]any{"ready": true})
	o.Object["spec"] = map[string]any{"items": items, "s": strings.Repeat("a", size)}
	return o
}

// Expressions whose cost does not depend on the object's real size are refused when
// they compile: nested comprehensions over the object's lists, comprehension bombs
// over literals, string repetition. Each error wraps ErrCostLimit (or names the
// nesting limit) and says which check it is.
func TestCompileRefusesCostlyExpressions(t *testing.T) {
	for _, c := range []struct{ name, expr string }{
		{"nested all over the object's list", "spec.items.all(x, spec.items.all(y, x != y || x == y))"},
		{"nested exists inside all", "self.spec.items.all(x, self.status.items.exists(y, y == x))"},
		{"comprehension bomb over literals", literal(100) + ".all(a, " + literal(100) + ".all(b, " + literal(100) + ".all(c, a + b + c >= 0)))"},
		{"map bomb over literals", "size(" + literal(100) + ".map(a, " + literal(100) + ".map(b, " + literal(100) + ".map(c, c)))) > 0"},
		{"string repetition", "spec.items.all(i, (" + strings.Repeat("spec.s + ", 40) + "spec.s).size() > 0)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Compile([]Check{{APIVersion: "example.com/v1", Kind: "Widget", Current: "true", Failed: c.expr}})
			if !errors.Is(err, ErrCostLimit) {
				t.Fatalf("err = %v, want the cost limit", err)
			}
			if !strings.Contains(err.Error(), "healthChecks[0] (Widget) failed:") {
				t.Errorf("err = %v, want it to name the check", err)
			}
		})
	}
	_, err := Compile([]Check{{APIVersion: "example.com/v1", Kind: "Widget",
		Current: "[1].all(a, [1].all(b, [1].all(c, [1].all(d, true))))"}})
	if err == nil || !strings.Contains(err.Error(), "nesting") {
		t.Errorf("four nested comprehensions: err = %v, want the nesting limit", err)
	}
}

// Evaluation is bounded whatever the compile-time estimate said: before an expression
// runs on an object it is estimated with that object's sizes, and one that would cost
// more than CostLimit does not run (ErrCostLimit, status Unknown).
func TestEvaluateRefusesWhatWouldCostTooMuch(t *testing.T) {
	for _, c := range []struct {
		name     string
		expr     string
		estimate bool // the expression passes the compile-time estimate
		obj      *unstructured.Unstructured
	}{
		{"nested all over a large list", "spec.items.all(x, spec.items.all(y, x != y || x == y))", false, big(20000, 0)},
		{"comprehension bomb over literals", literal(150) + ".all(a, " + literal(150) + ".all(b, " + literal(150) + ".all(c, a + b + c >= 0)))", false, big(0, 0)},
		{"string repetition over a large string", "spec.items.all(i, (spec.s + spec.s + spec.s).size() > 0)", true, big(5000, 1<<20)},
		{"linear check over a list far larger than assumed", "spec.items.all(i, i >= 0)", true, big(1<<20, 0)},
	} {
		t.Run(c.name, func(t *testing.T) {
			checks, err := compile([]Check{{APIVersion: "example.com/v1", Kind: "Widget", Current: c.expr}}, !c.estimate)
			if c.estimate == (err != nil) {
				t.Fatalf("compile-time estimate: %v", err)
			}
			if checks == nil {
				checks, err = compile([]Check{{APIVersion: "example.com/v1", Kind: "Widget", Current: c.expr}}, false)
				if err != nil {
					t.Fatal(err)
				}
			}
			st, err := checks.Evaluate(c.obj)
			if !errors.Is(err, ErrCostLimit) || st != Unknown {
				t.Fatalf("got %s, %v; want Unknown and the cost limit", st, err)
			}
			judged, msg := checks.Judge(c.obj)
			if judged != Unknown || !strings.Contains(msg, "cost limit") {
				t.Errorf("Judge = %s, %q", judged, msg)
			}
		})
	}
}

// An evaluation ends when its context does (the interrupt is checked inside
// comprehensions), with ErrCostLimit.
func TestEvaluateContextIsInterrupted(t *testing.T) {
	checks, err := compile([]Check{{APIVersion: "example.com/v1", Kind: "Widget", Current: "spec.items.all(x, x >= 0)"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if st, err := checks.EvaluateContext(ctx, big(1000, 0)); !errors.Is(err, ErrCostLimit) || st != Unknown {
		t.Fatalf("got %s, %v; want Unknown and the bound", st, err)
	}
	if st, err := checks.EvaluateContext(context.Background(), big(1000, 0)); err != nil || st != Current {
		t.Fatalf("not cancelled: got %s, %v", st, err)
	}
}

// Checks as people write them compile under the estimate and judge large real objects.
func TestOrdinaryChecksStayWithinTheLimits(t *testing.T) {
	checks, err := Compile([]Check{{APIVersion: "example.com/v1", Kind: "Widget",
		Current:    "status.conditions.filter(c, c.type == 'Ready').all(c, c.status == 'True')",
		InProgress: "has(status.observedGeneration) && status.observedGeneration != metadata.generation",
		Failed:     "status.conditions.exists(c, c.type == 'Stalled' && c.status == 'True' && c.message.contains('quota'))",
	}})
	if err != nil {
		t.Fatal(err)
	}
	conds := []any{map[string]any{"type": "Ready", "status": "True", "message": "ok"}}
	for i := range 5000 {
		conds = append(conds, map[string]any{"type": fmt.Sprint("Other", i), "status": "False", "message": "nothing"})
	}
	o := widget(map[string]any{"conditions": conds})
	// A large string elsewhere in the object (kubectl's last-applied annotation) does
	// not count against a check that does not read it.
	o.SetAnnotations(map[string]string{"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat("x", 200_000)})
	if st, err := checks.Evaluate(o); err != nil || st != Current {
		t.Fatalf("got %s, %v; want Current", st, err)
	}
}
