// Package celhealth is the CEL engine of internal/health: it compiles and evaluates the
// expressions of spec.healthChecks, the way Flux's healthCheckExprs do, within bounds
// of cost and time. Only internal/health imports it (internal/layering checks it).
package celhealth

import (
	"context"
	"fmt"

	"github.com/google/cel-go/cel"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Status is what a check says of an object.
type Status string

const (
	Current    Status = "Current"
	InProgress Status = "InProgress"
	Failed     Status = "Failed"
	// Unknown: no expression was true (the object is not yet judged healthy).
	Unknown Status = "Unknown"
)

// Check is one kind's expressions, as written in spec.healthChecks.
type Check struct {
	APIVersion, Kind            string
	Current, InProgress, Failed string
}

// Checks holds the compiled expressions, by kind.
type Checks struct {
	byGVK map[schema.GroupVersionKind]*compiled
}

type compiled struct {
	// in the order they are tried: failed, inProgress, current (the first true decides).
	programs []program
}

type program struct {
	status Status
	expr   string
	ast    *cel.Ast
	prg    cel.Program
}

// fields are bound as variables: the object as `self`, and its top-level fields too,
// so that both `self.status.ready` and `status.ready` work.
var fields = []string{"apiVersion", "kind", "metadata", "spec", "status", "data"}

var env = func() *cel.Env {
	opts := append([]cel.EnvOption{cel.Variable("self", cel.DynType)}, envOptions...)
	for _, f := range fields {
		opts = append(opts, cel.Variable(f, cel.DynType))
	}
	e, err := cel.NewEnv(opts...)
	if err != nil {
		panic(err) // a programming error: the environment is fixed
	}
	return e
}()

// Compile compiles every expression; the error names the kind, the field and the
// compiler's message. An expression whose estimated cost is over CostLimit is refused
// (the error wraps ErrCostLimit); the others are evaluated under it.
func Compile(checks []Check) (*Checks, error) {
	return compile(checks, true)
}

// compile is Compile; without estimate, only the evaluation bounds hold (for the tests
// of those bounds).
func compile(checks []Check, estimate bool) (*Checks, error) {
	out := &Checks{byGVK: map[schema.GroupVersionKind]*compiled{}}
	for i, c := range checks {
		gv, err := schema.ParseGroupVersion(c.APIVersion)
		if err != nil {
			return nil, fmt.Errorf("healthChecks[%d]: apiVersion %q: %w", i, c.APIVersion, err)
		}
		if c.Kind == "" {
			return nil, fmt.Errorf("healthChecks[%d]: kind is required", i)
		}
		if c.Current == "" {
			return nil, fmt.Errorf("healthChecks[%d] (%s): current is required", i, c.Kind)
		}
		cc := &compiled{}
		for _, e := range []struct {
			status Status
			field  string
			expr   string
		}{{Failed, "failed", c.Failed}, {InProgress, "inProgress", c.InProgress}, {Current, "current", c.Current}} {
			if e.expr == "" {
				continue
			}
			ast, iss := env.Compile(e.expr)
			if iss.Err() != nil {
				return nil, fmt.Errorf("healthChecks[%d] (%s) %s: %w", i, c.Kind, e.field, iss.Err())
			}
			if ast.OutputType() != cel.BoolType && ast.OutputType() != cel.DynType {
				return nil, fmt.Errorf("healthChecks[%d] (%s) %s: the expression must be a bool, not %s", i, c.Kind, e.field, ast.OutputType())
			}
			if err := checkCost(ast, sizes{max: assumedSize}); estimate && err != nil {
				return nil, fmt.Errorf("healthChecks[%d] (%s) %s: %w with lists, maps and strings of %d items: a check must stay linear in the object's size (no comprehension over its lists inside another)",
					i, c.Kind, e.field, err, assumedSize)
			}
			prg, err := env.Program(ast, programOptions...)
			if err != nil {
				return nil, fmt.Errorf("healthChecks[%d] (%s) %s: %w", i, c.Kind, e.field, err)
			}
			cc.programs = append(cc.programs, program{status: e.status, expr: e.expr, ast: ast, prg: prg})
		}
		out.byGVK[gv.WithKind(c.Kind)] = cc
	}
	return out, nil
}

// Has tells whether a check exists for the kind.
func (c *Checks) Has(gvk schema.GroupVersionKind) bool {
	if c == nil {
		return false
	}
	_, ok := c.byGVK[gvk]
	return ok
}

// Evaluate judges obj with its kind's expressions: the first true one (failed, then
// inProgress, then current) decides; none true is InProgress. An expression that
// cannot be evaluated on this object (a missing field) counts as false; one that yields
// no bool is an error, and so is one that would cost more than CostLimit on this object
// or runs longer than evalTimeout (wrapping ErrCostLimit).
func (c *Checks) Evaluate(obj *unstructured.Unstructured) (Status, error) {
	ctx, cancel := context.WithTimeout(context.Background(), evalTimeout)
	defer cancel()
	return c.EvaluateContext(ctx, obj)
}

// EvaluateContext is Evaluate, interrupted when ctx ends.
func (c *Checks) EvaluateContext(ctx context.Context, obj *unstructured.Unstructured) (Status, error) {
	cc, ok := c.byGVK[obj.GroupVersionKind()]
	if !ok {
		return Unknown, fmt.Errorf("no health check for %s", obj.GroupVersionKind())
	}
	vars := map[string]any{"self": obj.Object}
	for _, f := range fields {
		vars[f] = obj.Object[f]
		if vars[f] == nil {
			vars[f] = map[string]any{}
		}
	}
	sizes := objectSizes{obj: obj.Object, fallback: largest(obj.Object)}
	for _, p := range cc.programs {
		if err := checkCost(p.ast, sizes); err != nil {
			return Unknown, fmt.Errorf("health check %q of %s: %w", p.expr, obj.GetKind(), err)
		}
		val, _, err := p.prg.ContextEval(ctx, vars)
		if err != nil && interrupted(err) {
			return Unknown, fmt.Errorf("health check %q of %s %w: %v", p.expr, obj.GetKind(), ErrCostLimit, err)
		}
		if err != nil {
			continue // e.g. "no such key": the object does not say so yet
		}
		b, ok := val.Value().(bool)
		if !ok {
			return Unknown, fmt.Errorf("health check %q of %s gave %v, not a bool", p.expr, obj.GetKind(), val.Value())
		}
		if b {
			return p.status, nil
		}
	}
	return InProgress, nil
}

// Judge is obj's status by the checks and a message: Current, InProgress or Failed,
// or Unknown with the error's text when an expression fails or goes over its bounds.
// Call it for a kind that Has a check.
func (c *Checks) Judge(obj *unstructured.Unstructured) (Status, string) {
	st, err := c.Evaluate(obj)
	if err != nil {
		return Unknown, err.Error()
	}
	switch st {
	case Current:
		return Current, "health check: current"
	case Failed:
		return Failed, "health check: failed"
	default:
		return InProgress, "health check: in progress"
	}
}
