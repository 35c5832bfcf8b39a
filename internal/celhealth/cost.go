package celhealth

import (
	"errors"
	"fmt"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/interpreter"
)

// Bounds of a health check. Everything a check reads (the object) and the expression
// itself are a tenant's: one evaluation must not pin a worker.
//
// The cost is cel-go's estimate (about one unit per operation, strings and lists by
// their size), an upper bound of what an evaluation does: at compile time with every
// size of the object assumed (assumedSize), and before each evaluation with the sizes
// of that object, so that an expression is never run on an object it would cost more
// than CostLimit on. cel-go's runtime tracker (cel.CostLimit) is not used: its
// bookkeeping is quadratic in the iterations of a comprehension (v0.29.2: a plain
// `.all()` over a 50,000-item list takes 81 s with it, 15 ms without), which would turn
// the bound itself into the way to pin a worker. The wall clock bounds what the
// estimate does not see: ContextEval with evalTimeout, checked inside comprehensions.
const (
	// CostLimit is the most one evaluation of an expression may cost: the Kubernetes
	// API server's per-call limit for CRD validation rules. A linear check over a large
	// object stays far below it.
	CostLimit = 1_000_000
	// assumedSize is what the compile-time estimate assumes of every list, map and
	// string of the object (their sizes are not known before the object is): a thousand
	// items or characters. A check whose estimate is over CostLimit then is refused at
	// compile time: a comprehension inside another over the object's lists, or
	// comprehensions over literal lists nested to cost more than the limit whatever
	// the object, or a string repeated inside one.
	assumedSize = 1000
	// maxExpressionSize is the longest expression accepted, in code points.
	maxExpressionSize = 8192
	// maxComprehensionNesting is how deep comprehensions (all, exists, map, filter …)
	// may nest.
	maxComprehensionNesting = 3
	// evalTimeout bounds one evaluation's wall-clock time; the interrupt is checked
	// every interruptEvery iterations of a comprehension.
	evalTimeout    = time.Second
	interruptEvery = 100
)

// ErrCostLimit is wrapped by the error of an expression whose estimated cost is over
// CostLimit (at compile time, or on the object it was to judge), or whose evaluation
// was interrupted (evalTimeout, or its context ended).
var ErrCostLimit = errors.New("exceeds the cost limit of a health check")

// envOptions bound parsing and checking.
var envOptions = []cel.EnvOption{
	cel.ParserExpressionSizeLimit(maxExpressionSize),
	cel.ASTValidators(cel.ValidateComprehensionNestingLimit(maxComprehensionNesting)),
}

// programOptions make evaluations interruptible (ContextEval).
var programOptions = []cel.ProgramOption{cel.InterruptCheckFrequency(interruptEvery)}

// sizes is the cost estimator: every size CEL does not know (the object's lists, maps
// and strings) is at most max.
type sizes struct{ max uint64 }

func (s sizes) EstimateSize(checker.AstNode) *checker.SizeEstimate {
	return &checker.SizeEstimate{Min: 0, Max: s.max}
}

func (sizes) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// checkCost refuses an expression whose estimated cost (sizes as est says) is over
// CostLimit.
func checkCost(ast *cel.Ast, est checker.CostEstimator) error {
	cost, err := env.EstimateCost(ast, est)
	if err != nil {
		return fmt.Errorf("estimating its cost: %w", err)
	}
	if cost.Max > CostLimit {
		return fmt.Errorf("estimated cost %d %w (%d)", cost.Max, ErrCostLimit, CostLimit)
	}
	return nil
}

// objectSizes is the estimator before an evaluation: the size of what a path of the
// expression reaches in this object (the largest, when it reaches several: the items of
// a list, the values of a map), and fallback (its largest list, map or string) where
// the expression does not say.
type objectSizes struct {
	obj      map[string]any
	fallback uint64
}

func (s objectSizes) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	path := n.Path()
	if len(path) == 0 {
		return &checker.SizeEstimate{Min: 0, Max: s.fallback}
	}
	values := []any{s.obj}
	if path[0] != "self" {
		values = []any{s.obj[path[0]]}
	}
	for _, step := range path[1:] {
		var next []any
		for _, v := range values {
			switch t := v.(type) {
			case map[string]any:
				switch step {
				case "@keys":
					for k := range t {
						next = append(next, k)
					}
				case "@items", "@values":
					for k, e := range t {
						next = append(next, k, e)
					}
				default:
					if e, ok := t[step]; ok {
						next = append(next, e)
					}
				}
			case []any:
				if step == "@keys" || step == "@items" || step == "@values" {
					next = append(next, t...)
				}
			}
		}
		values = next
	}
	var most uint64
	for _, v := range values {
		most = max(most, sizeOf(v))
	}
	return &checker.SizeEstimate{Min: 0, Max: most}
}

func (objectSizes) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// sizeOf is the size CEL gives v: items of a list or map, bytes of a string (at least
// its characters).
func sizeOf(v any) uint64 {
	switch t := v.(type) {
	case map[string]any:
		return uint64(len(t))
	case []any:
		return uint64(len(t))
	case string:
		return uint64(len(t))
	}
	return 0
}

// largest is the size of the largest list, map or string in v.
func largest(v any) uint64 {
	n := sizeOf(v)
	switch t := v.(type) {
	case map[string]any:
		for _, e := range t {
			n = max(n, largest(e))
		}
	case []any:
		for _, e := range t {
			n = max(n, largest(e))
		}
	}
	return n
}

// interrupted tells whether err is an evaluation stopped by its context, as opposed to
// an expression that does not apply to this object.
func interrupted(err error) bool {
	var cancelled interpreter.EvalCancelledError
	return errors.As(err, &cancelled) || errors.Is(err, interpreter.InterruptError{})
}
