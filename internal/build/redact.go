package build

import (
	"errors"
	"regexp"
	"slices"
)

// Parsers quote the values they fail on: yaml.v3 writes "cannot decode !!str `value`
// as a !!int", kustomize prints an inline patch as [patch: "text"]. In a Secret that
// value is the secret, and these messages end up in conditions and events.
var (
	quotedValueRE = regexp.MustCompile("`[^`]*`")
	inlinePatchRE = regexp.MustCompile(`\[patch: "(?:[^"\\]|\\.)*"\]`)
)

// redactedValue replaces every quoted value.
const redactedValue = "(value redacted)"

// redact drops the values quoted in a parser's message, keeping the rest: the file,
// the line and the kind of error.
func redact(msg string) string {
	msg = quotedValueRE.ReplaceAllLiteralString(msg, redactedValue)
	return inlinePatchRE.ReplaceAllLiteralString(msg, "[patch: "+redactedValue+"]")
}

// redactError returns err, or, if its message quotes values, an error with them
// redacted that does not unwrap to err (so that no caller can reach the value
// through it); errors.Is and errors.As still see the package's own errors in it.
func redactError(err error) error {
	if err == nil {
		return nil
	}
	return redactMessage(err.Error(), err)
}

// redactMessage returns err reworded as msg, with the values msg quotes redacted.
func redactMessage(msg string, err error) error {
	if r := redact(msg); r != msg {
		return &redactedError{msg: r, err: err}
	}
	if msg == err.Error() {
		return err
	}
	return &rewordedError{msg: msg, err: err}
}

// sentinels are the errors of this package that callers test for.
var sentinels = []error{ErrOutsideCheckout, ErrRemoteNotAllowed, ErrPluginsDisabled, ErrTooLarge, ErrCheckoutChanged, ErrPathNotFound}

type redactedError struct {
	msg string
	err error // not returned by Unwrap: it quotes the value
}

func (e *redactedError) Error() string { return e.msg }

// Is reports whether the original error matches one of the package's sentinel errors.
func (e *redactedError) Is(target error) bool {
	return slices.Contains(sentinels, target) && errors.Is(e.err, target)
}

// As finds an *OutsideError (a path, never a value) in the original error.
func (e *redactedError) As(target any) bool {
	if p, ok := target.(**OutsideError); ok {
		return errors.As(e.err, p)
	}
	return false
}

// rewordedError is err with another message.
type rewordedError struct {
	msg string
	err error
}

func (e *rewordedError) Error() string { return e.msg }
func (e *rewordedError) Unwrap() error { return e.err }
