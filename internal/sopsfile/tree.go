// Package sopsfile reads and writes the SOPS file format (YAML, JSON, dotenv, INI and binary documents, their metadata, value cipher and MAC) without SOPS' key-service packages.
//
// SOPS' own Go packages cannot be linked without the AWS, GCP, Azure and Vault SDKs
// (each of them reaches SOPS' key-service registry), which made the binary 60 MB and
// the operator's resident memory tens of MiB larger (issue 26). The format itself is
// small and documented, so it is read here over the standard library,
// go.yaml.in/yaml/v3 and gopkg.in/ini.v1 (the parsers SOPS uses, so that a file means
// the same here); tests hold it to SOPS' own packages (internal/testutil/sopsenc) byte for byte.
// Keys are not this package's concern: File.Metadata.Groups lists the master keys with
// their copies of the data key, and a caller that recovered the data key passes it to
// File.Decrypt.
//
// The document model follows SOPS': a Branch is an ordered list of Items (a key and a
// value, or a Comment); values are string, int, float64, bool, time.Time (a YAML
// timestamp), nil, a Branch or a []any (whose elements may be Comments). The order is
// kept because the MAC covers the values in the order the file holds them.
package sopsfile

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Comment is a comment of a YAML, dotenv or INI document. SOPS encrypts comments too
// (unless a comment rule says otherwise) but leaves them out of the MAC.
type Comment struct {
	Value  string
	Inline bool
}

// Item is one entry of a Branch: Key is a string, or a Comment with a nil Value.
type Item struct {
	Key   any
	Value any
}

// Branch is a mapping in its file's order.
type Branch []Item

// rules are the metadata's choice of what is encrypted: at most one of them is set,
// and unencrypted_suffix "_unencrypted" when none is.
type rules struct {
	unencryptedSuffix, encryptedSuffix       string
	unencryptedRegex, encryptedRegex         *regexp.Regexp
	unencryptedCommentRe, encryptedCommentRe *regexp.Regexp
}

// compileRule compiles a rule's regular expression. SOPS ignores a regular expression
// that does not compile (it never matches), and so does this.
func compileRule(expr string) *regexp.Regexp {
	if expr == "" {
		return nil
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return regexp.MustCompile(`$.^`)
	}
	return re
}

// encrypted tells whether the value at path (the mapping keys from the document's
// root, list positions left out) is encrypted, given the comments above it (one list
// per nesting level); isComment says the value is itself a comment. The rules are
// applied in SOPS' order, each later one overriding the earlier.
func (r *rules) encrypted(path []string, comments [][]string, isComment bool) bool {
	enc := true
	if r.unencryptedSuffix != "" {
		for _, p := range path {
			if strings.HasSuffix(p, r.unencryptedSuffix) {
				enc = false
				break
			}
		}
	}
	if r.encryptedSuffix != "" {
		enc = false
		for _, p := range path {
			if strings.HasSuffix(p, r.encryptedSuffix) {
				enc = true
				break
			}
		}
	}
	if r.unencryptedRegex != nil {
		for _, p := range path {
			if r.unencryptedRegex.MatchString(p) {
				enc = false
				break
			}
		}
	}
	if r.encryptedRegex != nil {
		enc = false
		for _, p := range path {
			if r.encryptedRegex.MatchString(p) {
				enc = true
				break
			}
		}
	}
	if r.unencryptedCommentRe != nil && anyComment(comments, r.unencryptedCommentRe, false) {
		enc = false
	}
	if r.encryptedCommentRe != nil {
		enc = anyComment(comments, r.encryptedCommentRe, isComment)
	}
	return enc
}

// anyComment tells whether a comment of stack matches re; skipLast leaves out the
// last comment of the innermost level (a comment is not encrypted because of itself).
func anyComment(stack [][]string, re *regexp.Regexp, skipLast bool) bool {
	for i, level := range stack {
		for j, c := range level {
			if skipLast && i == len(stack)-1 && j == len(level)-1 {
				continue
			}
			if re.MatchString(c) {
				return true
			}
		}
	}
	return false
}

// leafFunc is called for each leaf of a document (a scalar or a comment) with its path
// and the comments above it; it returns the leaf's new value.
type leafFunc func(v any, path []string, comments [][]string) (any, error)

// walkBranch calls f on every leaf of b in order, replacing each by f's result, as
// SOPS walks a document: comments collect on a stack per nesting level and are cleared
// by the next value; a nil value is no leaf.
func walkBranch(b Branch, path []string, comments [][]string, f leafFunc) error {
	comments = append(comments, nil)
	top := len(comments) - 1
	for i, item := range b {
		if c, ok := item.Key.(Comment); ok {
			comments[top] = append(comments[top], c.Value)
			v, err := f(c, path, comments)
			if err != nil {
				return err
			}
			switch v := v.(type) {
			case Comment:
				b[i].Key = v
			case string:
				b[i].Key = Comment{Value: v, Inline: c.Inline}
			default:
				return fmt.Errorf("a comment became a %T", v)
			}
			continue
		}
		c, valueIsComment := item.Value.(Comment)
		if valueIsComment {
			comments[top] = append(comments[top], c.Value)
		}
		key, ok := item.Key.(string)
		if !ok {
			return fmt.Errorf("a key of type %T: only string keys are supported", item.Key)
		}
		v, err := walkValue(item.Value, append(path[:len(path):len(path)], key), comments, f)
		if err != nil {
			return err
		}
		b[i].Value = v
		if !valueIsComment {
			comments[top] = nil
		}
	}
	return nil
}

func walkList(l []any, path []string, comments [][]string, f leafFunc) error {
	comments = append(comments, nil)
	top := len(comments) - 1
	for i, v := range l {
		c, isComment := v.(Comment)
		if isComment {
			comments[top] = append(comments[top], c.Value)
		}
		nv, err := walkValue(v, path, comments, f)
		if err != nil {
			return err
		}
		l[i] = nv
		if !isComment {
			comments[top] = nil
		}
	}
	return nil
}

func walkValue(v any, path []string, comments [][]string, f leafFunc) (any, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case Branch:
		return v, walkBranch(v, path, comments, f)
	case []any:
		return v, walkList(v, path, comments, f)
	case string, int, float64, bool, time.Time, Comment:
		return f(v, path, comments)
	case []byte: // a YAML !!binary scalar, a string to SOPS
		return f(string(v), path, comments)
	default:
		return nil, fmt.Errorf("a value of type %T cannot be walked", v)
	}
}
