package build

import (
	"regexp"
	"strconv"
)

// yamlLine is go-yaml's "yaml: line N: PROBLEM" for the problems its parser (not its
// scanner) reports. For those go-yaml (v2 and v3: parser.fail in decode.go) prints the
// mark's 0-based line, one less than the line an editor shows; its scanner's errors
// carry the 1-based line.
var yamlLine = regexp.MustCompile(`yaml: line (\d+): (did not find expected (?:',' or '[\]}]'|<document start>|<stream-start>|'-' indicator|key|node content)|found (?:duplicate %YAML directive|duplicate %TAG directive|incompatible YAML document|undefined tag handle))`)

// fixYAMLLine returns err with the line of each go-yaml parser error in its message made
// 1-based (the line an editor shows); err is kept for errors.Is and errors.As.
func fixYAMLLine(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	fixed := yamlLine.ReplaceAllStringFunc(msg, func(m string) string {
		sub := yamlLine.FindStringSubmatch(m)
		n, convErr := strconv.Atoi(sub[1])
		if convErr != nil {
			return m
		}
		return "yaml: line " + strconv.Itoa(n+1) + ": " + sub[2]
	})
	if fixed == msg {
		return err
	}
	return redactMessage(fixed, err)
}
