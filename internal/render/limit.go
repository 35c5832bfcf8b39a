package render

import (
	"errors"
	"fmt"
)

// LimitError is a render stopped at one of its bounds (a render worker's memory, CPU
// time, wall-clock deadline or output size): the revision stalls with reason
// RenderLimitExceeded.
type LimitError struct {
	// Bound is one of the Bound… constants.
	Bound string
	// Limit is the bound's value as its flag sets it.
	Limit string
}

// Bounds of a render, as LimitError.Bound names them.
const (
	BoundMemory  = "memory"
	BoundCPU     = "cpu"
	BoundTimeout = "timeout"
	BoundOutput  = "output"
)

func (e *LimitError) Error() string {
	return fmt.Sprintf("the render exceeded its %s limit (%s) and was stopped", e.Bound, e.Limit)
}

// IsLimit tells whether err is a render stopped at one of its bounds.
func IsLimit(err error) bool { var l *LimitError; return errors.As(err, &l) }
