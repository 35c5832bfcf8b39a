package preview

import (
	"fmt"
	"strings"

	"github.com/gitsync-dev/gitsync/internal/drift"
	"github.com/gitsync-dev/gitsync/internal/forge"
	"github.com/gitsync-dev/gitsync/internal/operations"
	"github.com/gitsync-dev/gitsync/internal/redact"
)

// Bounds of a comment: a forge takes about 64 KiB; the details stop at commentBudget
// with an "N more" line, and one object's diff shows at most diffLines lines.
const (
	commentBudget = 48 << 10
	diffLines     = 80
	errorBytes    = 2000
)

// Comment is the preview's one comment for a pull request: a table of every
// Application's counts (operations.Table, the table `gitsync diff source` prints), then
// per Application with changes or errors its render or dry-run error in words, refusals
// (RBAC by name), the hooks a sync would run and each changed object's fields with a
// collapsed diff (Secret and decrypted values masked), cut at the comment's budget with
// an "N more" line. err is a failure before any Application (the fetch).
func Comment(req Request, revision string, diffs []operations.AppDiff, err error) string {
	var b strings.Builder
	b.WriteString(Marker + "\n")
	fmt.Fprintf(&b, "### gitsync preview of %s\n\n", code(short(req.HeadSHA)))
	b.WriteString("A server-side dry-run of the head against the live cluster, as each Application's own identity; nothing was changed. SOPS-encrypted documents are not decrypted for a preview and are not compared.\n\n")
	if err != nil {
		fmt.Fprintf(&b, "**The preview failed:** %s\n", inline(err.Error()))
		return b.String()
	}
	if len(diffs) == 0 {
		b.WriteString("No Application uses this repository.\n")
		return b.String()
	}
	rows := operations.Table(diffs)
	for i, row := range rows {
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
		if i == 0 {
			b.WriteString(strings.Repeat("|---", len(row)) + "|\n")
		}
	}
	b.WriteString("\n")
	if revision != "" {
		fmt.Fprintf(&b, "Rendered at %s.\n\n", code(revision))
	}
	more := 0
	for _, d := range diffs {
		section := appSection(d)
		if section == "" {
			continue
		}
		if b.Len()+len(section) > commentBudget {
			more++
			continue
		}
		b.WriteString(section)
	}
	if more > 0 {
		fmt.Fprintf(&b, "\n%d more Applications with changes or errors not shown (the comment's size limit): run `gitsync diff source %s -n %s --revision %s`.\n",
			more, req.Name, req.Namespace, req.HeadSHA)
	}
	return b.String()
}

// appSection is one Application's details; "" when it has no changes, errors or hooks.
func appSection(d operations.AppDiff) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#### %s\n\n", d.Name())
	if d.Err != nil {
		fmt.Fprintf(&b, "**Render or dry-run failed:** %s\n\n", inline(d.Err.Error()))
		return b.String()
	}
	if !d.Changes() && !d.Failed() {
		return ""
	}
	sensitive := d.Diff.Rendered.Sensitive
	for _, ch := range d.Diff.SourceChanges() { // which of several sources this revision moves
		from := "(not applied yet)"
		if ch.From != "" {
			from = code(operations.ShortRevision(ch.From))
		}
		fmt.Fprintf(&b, "- source %s: %s → %s\n", code(ch.Source), from, code(operations.ShortRevision(ch.To)))
	}
	for _, o := range d.Diff.Outcomes {
		if o.Action != operations.Failed {
			continue
		}
		if o.Forbidden {
			fmt.Fprintf(&b, "- **Refused by RBAC:** %s: the Application's identity may not apply it: %s\n", code(o.Subject), inline(redact.Values(o.Err, sensitive...)))
		} else {
			fmt.Fprintf(&b, "- **Refused by the API server:** %s: %s\n", code(o.Subject), inline(redact.Values(o.Err, sensitive...)))
		}
	}
	if len(d.Diff.Hooks) > 0 {
		fmt.Fprintf(&b, "- Hooks a sync would run: %s\n", code(strings.Join(d.Diff.Hooks, ", ")))
	}
	for _, o := range d.Diff.Outcomes {
		switch o.Action {
		case drift.Created, operations.PrunedAction:
			fmt.Fprintf(&b, "- %s %s\n", o.Action, code(o.Subject))
		case drift.Configured:
			var fields []string
			for _, f := range o.Fields {
				fields = append(fields, code(redact.Values(f.Path, sensitive...)))
			}
			fmt.Fprintf(&b, "- configured %s: %s\n", code(o.Subject), strings.Join(fields, ", "))
			if o.Diff != "" {
				fmt.Fprintf(&b, "  <details><summary>diff</summary>\n\n  ```diff\n%s  ```\n  </details>\n", indent(capLines(redact.Values(o.Diff, sensitive...), diffLines)))
			}
		}
	}
	b.WriteString("\n")
	return b.String()
}

// Summary is the commit status of a preview: failure when the fetch or any Application
// failed (render, dry-run, a refused object), success otherwise; the description says
// how many Applications change.
func Summary(diffs []operations.AppDiff, err error) (state, description string) {
	if err != nil {
		return forge.StateFailure, "preview failed: " + err.Error()
	}
	changed, failed := 0, []string{}
	for _, d := range diffs {
		if d.Failed() {
			failed = append(failed, d.Name())
		}
		if d.Changes() {
			changed++
		}
	}
	if len(failed) > 0 {
		return forge.StateFailure, fmt.Sprintf("%d of %d Applications would fail: %s", len(failed), len(diffs), strings.Join(failed, ", "))
	}
	return forge.StateSuccess, fmt.Sprintf("%d of %d Applications would change", changed, len(diffs))
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// code quotes s as inline code; backticks in s are replaced, so a tenant's text cannot
// leave the code span.
func code(s string) string { return "`" + strings.ReplaceAll(s, "`", "'") + "`" }

// inline makes an error one line of at most errorBytes, in a code span (no markdown,
// no mentions of the error's text take effect).
func inline(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > errorBytes {
		s = s[:errorBytes] + "…"
	}
	return code(s)
}

// capLines keeps the first n lines of s, then says how many more there were.
func capLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) <= n {
		return strings.Join(lines, "")
	}
	return strings.Join(lines[:n], "") + fmt.Sprintf("… %d more lines\n", len(lines)-n)
}

// indent puts every line inside the list item, and breaks a ``` in the diff so it
// cannot close the block.
func indent(s string) string {
	s = strings.ReplaceAll(s, "```", "`\u200b``")
	var b strings.Builder
	for _, line := range strings.SplitAfter(s, "\n") {
		if line != "" {
			b.WriteString("  " + line)
		}
	}
	return b.String()
}
