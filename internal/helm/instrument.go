package helm

import (
	"crypto/sha256"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"text/template/parse"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// Names of the functions that instrumented templates call (see instrument).
const (
	stepFunc = "gitsyncStep"
	turnFunc = "gitsyncTurn"
	outFunc  = "gitsyncOut"
	tplFunc  = "gitsyncTpl"
	sizeFunc = "gitsyncSize"
)

// sizedFuncs are the functions that turn any value into a string as large as the value
// (serializers, print, quote): their arguments pass through gitsyncSize, which charges
// the value's size before the string is built (a list of a thousand references to one
// megabyte string is a gigabyte once printed).
var sizedFuncs = map[string]bool{
	"toYaml": true, "toYamlPretty": true, "mustToYaml": true, "toToml": true, "mustToToml": true,
	"toJson": true, "toPrettyJson": true, "toRawJson": true, "mustToJson": true,
	"mustToPrettyJson": true, "mustToRawJson": true, "toString": true, "toStrings": true,
	"cat": true, "print": true, "printf": true, "println": true, "quote": true, "squote": true,
}

// instrumentOff is set only by tests (of the fallback for templates that
// cannot be stopped, and of output with and without it); atomic, as a render of an
// earlier test may still be starting.
var instrumentOff atomic.Bool

// Go's template engine has no hook per loop turn or per byte written, and Helm's engine
// renders into buffers of its own: a loop over a list made once (or over an integer,
// `range 1000000000`) calls no function, so no budget sees it, and what it prints is
// unbounded. instrument rewrites a template's text so that it pays for what it does,
// without changing its output:
//   - every list that runs (a template's body, a define, each turn of a range, an if,
//     with or else branch) starts with {{- gitsyncStep S B }}, which charges S steps
//     (1 for a template's body and a range's turn) and B bytes (the text the list
//     writes) and checks the render's deadline ({{- gitsyncTurn }} for 1 step and no
//     text);
//   - every action that prints gets `| gitsyncOut`, which charges what it prints;
//   - the template text given to tpl goes through gitsyncTpl, which instruments it too.
//
// The insertions add no line (errors keep their line numbers) and no output: the
// inserted action trims only the white space before it, which is either none or
// already trimmed. A text that does not parse is returned as it is (Helm reports the
// error).
func instrument(name, text string) string {
	tr := parse.New(name)
	tr.Mode = parse.SkipFuncCheck
	set := map[string]*parse.Tree{}
	if _, err := tr.Parse(text, "", "", set); err != nil {
		return text
	}
	ins := &instrumenter{text: text}
	for _, t := range set {
		// An empty template stays empty: Go keeps an earlier definition of a name
		// over an empty one, and an empty one does nothing to charge.
		if t.Root != nil && !parse.IsEmptyTree(t.Root) {
			ins.list(t.Root, 1)
		}
	}
	return ins.apply()
}

type edit struct {
	start, end int // text[start:end] is replaced by with (start == end: an insertion)
	with       string
	// outer orders insertions at one position: the higher goes to the right. An
	// action's ` | gitsyncOut` is outer to the `)` that closes a wrapped last argument
	// at the same place (`toJson (gitsyncSize (x)) | gitsyncOut`, not
	// `toJson (gitsyncSize (x) | gitsyncOut)`, which would hand toJson a string).
	outer int
}

type instrumenter struct {
	text  string
	edits []edit
}

// list instruments a list that runs steps turns' worth each time it starts.
func (in *instrumenter) list(l *parse.ListNode, steps int) {
	if l == nil {
		return
	}
	bytes := 0
	for _, n := range l.Nodes {
		if t, ok := n.(*parse.TextNode); ok {
			bytes += len(t.Text)
		}
	}
	if (steps > 0 || bytes > 0) && in.listStart(l) {
		call := fmt.Sprintf("{{- %s %d %d }}", stepFunc, steps, bytes)
		if steps == 1 && bytes == 0 {
			call = "{{- " + turnFunc + " }}" // the most frequent: an argument-free call is cheaper
		}
		in.edits = append(in.edits, edit{start: int(l.Pos), end: int(l.Pos), with: call})
	}
	for _, n := range l.Nodes {
		in.node(n)
	}
}

// listStart tells whether l.Pos is where l's text starts: its first text, or the
// delimiter of its first action (or of the end of an empty list). Not so for the else
// list of `{{ else if }}`, whose position is inside the action.
func (in *instrumenter) listStart(l *parse.ListNode) bool {
	pos := int(l.Pos)
	if pos < 0 || pos > len(in.text) {
		return false
	}
	if len(l.Nodes) > 0 {
		if t, ok := l.Nodes[0].(*parse.TextNode); ok {
			return int(t.Pos) == pos
		}
	}
	return strings.HasPrefix(in.text[pos:], "{{")
}

func (in *instrumenter) node(n parse.Node) {
	switch n := n.(type) {
	case *parse.ActionNode:
		in.pipe(n.Pipe)
		if len(n.Pipe.Decl) == 0 {
			in.printed(n)
		}
	case *parse.RangeNode:
		in.pipe(n.Pipe)
		in.list(n.List, 1)
		in.list(n.ElseList, 0)
	case *parse.IfNode:
		in.pipe(n.Pipe)
		in.list(n.List, 0)
		in.list(n.ElseList, 0)
	case *parse.WithNode:
		in.pipe(n.Pipe)
		in.list(n.List, 0)
		in.list(n.ElseList, 0)
	case *parse.TemplateNode:
		in.pipe(n.Pipe)
	case *parse.ListNode:
		in.list(n, 0)
	}
}

// printed makes the action's value pass through gitsyncOut, before its closing
// delimiter (and its trim marker).
func (in *instrumenter) printed(a *parse.ActionNode) {
	end := closing(in.text, int(a.Pos), "}}")
	if end < 0 {
		return
	}
	if end >= 2 && in.text[end-1] == '-' && isSpace(in.text[end-2]) {
		end -= 2
	}
	in.edits = append(in.edits, edit{start: end, end: end, with: " | " + outFunc, outer: 1})
}

// pipe instruments the tpl calls of a pipeline (and of the pipelines in it).
func (in *instrumenter) pipe(p *parse.PipeNode) {
	if p == nil {
		return
	}
	for _, c := range p.Cmds {
		for _, a := range c.Args {
			switch a := a.(type) {
			case *parse.PipeNode:
				in.pipe(a)
			case *parse.ChainNode:
				if sub, ok := a.Node.(*parse.PipeNode); ok {
					in.pipe(sub)
				}
			}
		}
	}
	for i, c := range p.Cmds {
		id, ok := c.Args[0].(*parse.IdentifierNode)
		if !ok {
			continue
		}
		switch {
		case id.Ident == "tpl" && len(c.Args) >= 2:
			in.wrapArg(c.Args[1], tplFunc)
		case sizedFuncs[id.Ident]:
			for _, a := range c.Args[1:] {
				in.wrapArg(a, sizeFunc)
			}
			if i > 0 && in.at(int(id.Pos), id.Ident) { // X | toYaml: the value comes from the pipe
				in.edits = append(in.edits, edit{start: int(id.Pos), end: int(id.Pos), with: sizeFunc + " | "})
			}
		}
	}
}

// at tells whether text holds s at pos.
func (in *instrumenter) at(pos int, s string) bool {
	return pos >= 0 && pos <= len(in.text) && strings.HasPrefix(in.text[pos:], s)
}

// wrapArg makes an argument pass through fn (gitsyncTpl, gitsyncSize): an argument in
// parentheses, or one whose text is exactly as parsed (a field, variable, string).
// Another (a chain on a parenthesized value) is left as it is: the render's deadline
// and the abandonment of renders still bound it.
func (in *instrumenter) wrapArg(arg parse.Node, fn string) {
	switch arg.(type) {
	case *parse.NumberNode, *parse.BoolNode, *parse.NilNode, *parse.StringNode:
		if fn == sizeFunc {
			return // a constant of the template: small, and charged as its text
		}
	}
	switch arg.(type) {
	case *parse.NilNode:
		return
	}
	pos := int(arg.Position())
	if pos < 0 || pos > len(in.text) {
		return
	}
	if p, ok := arg.(*parse.PipeNode); ok {
		open := strings.LastIndexByte(in.text[:pos], '(')
		if open < 0 || strings.TrimSpace(in.text[open+1:pos]) != "" {
			return
		}
		end := closing(in.text, pos, ")")
		if end < 0 || len(p.Decl) > 0 {
			return
		}
		in.edits = append(in.edits,
			edit{start: open, end: open, with: "(" + fn + " "},
			edit{start: end + 1, end: end + 1, with: ")"})
		return
	}
	// A field's or chain's position is that of its last segment: its text starts at
	// most len(s) before.
	s := arg.String()
	for start := pos; start >= 0 && start >= pos-len(s); start-- {
		if strings.HasPrefix(in.text[start:], s) {
			in.edits = append(in.edits, edit{start: start, end: start + len(s), with: "(" + fn + " " + s + ")"})
			return
		}
	}
}

// apply makes the edits, last first (at one position, the outer first: each insertion
// goes to the left of those made before); none when two overlap.
func (in *instrumenter) apply() string {
	sort.SliceStable(in.edits, func(i, j int) bool {
		a, b := in.edits[i], in.edits[j]
		if a.start != b.start {
			return a.start > b.start
		}
		return a.outer > b.outer
	})
	out := in.text
	limit := len(in.text)
	for _, e := range in.edits {
		if e.end > limit || e.start > e.end {
			return in.text
		}
		out = out[:e.start] + e.with + out[e.end:]
		limit = e.start
	}
	return out
}

// closing is the index of the first closer (`}}` or `)`) at or after pos that is not
// inside a string, raw string or character literal, and (for `)`) not closing a
// parenthesis opened after pos; -1 when there is none.
func closing(text string, pos int, closer string) int {
	depth := 0
	for i := pos; i < len(text); i++ {
		switch c := text[i]; c {
		case '"', '\'':
			for i++; i < len(text) && text[i] != c; i++ {
				if text[i] == '\\' {
					i++
				}
			}
		case '`':
			for i++; i < len(text) && text[i] != '`'; i++ {
			}
		case '(':
			depth++
		case ')':
			if closer == ")" && depth == 0 {
				return i
			}
			depth--
		case '}':
			if closer == "}}" && strings.HasPrefix(text[i:], "}}") {
				return i
			}
		}
	}
	return -1
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// instrumented caches instrument's results by the text's hash: a chart's templates are
// rendered at every sync and seldom change.
var instrumented = struct {
	sync.Mutex
	m map[[32]byte]string
}{m: map[[32]byte]string{}}

const maxInstrumented = 4096

func instrumentCached(name, text string) string {
	key := sha256.Sum256([]byte(text))
	instrumented.Lock()
	out, ok := instrumented.m[key]
	instrumented.Unlock()
	if ok {
		return out
	}
	out = instrument(name, text)
	instrumented.Lock()
	if len(instrumented.m) >= maxInstrumented {
		clear(instrumented.m)
	}
	instrumented.m[key] = out
	instrumented.Unlock()
	return out
}

// instrumentChart is a copy of c (and of its dependencies) whose templates are
// instrumented; c is left as it is.
func instrumentChart(c *chart.Chart) *chart.Chart {
	if instrumentOff.Load() {
		return c
	}
	cp := *c
	cp.Templates = make([]*common.File, len(c.Templates))
	for i, t := range c.Templates {
		if t == nil {
			continue
		}
		f := *t
		f.Data = []byte(instrumentCached(t.Name, string(t.Data)))
		cp.Templates[i] = &f
	}
	deps := c.Dependencies()
	copies := make([]*chart.Chart, len(deps))
	for i, d := range deps {
		copies[i] = instrumentChart(d)
	}
	cp.SetDependencies(copies...)
	return &cp
}
