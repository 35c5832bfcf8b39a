package imageupdate

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"text/template"
)

// MaxMessageBytes bounds a rendered commit message.
const MaxMessageBytes = 64 << 10

// DefaultMessageTemplate is the message when the automation gives none.
const DefaultMessageTemplate = `Update images from {{ .AutomationObject }}

{{ range $file, $setters := .Changed.FileChanges -}}
{{ range $setter, $changes := $setters -}}
{{ range $changes -}}
- {{ $file }}: {{ .OldValue }} -> {{ .NewValue }} ({{ $setter }})
{{ end -}}
{{ end -}}
{{ end -}}
`

// TemplateData is what a messageTemplate sees; the names are Flux's, so Flux users'
// templates carry over.
type TemplateData struct {
	// AutomationObject is the automation's namespace/name.
	AutomationObject string
	// Changed lists what the run changed.
	Changed ChangeResult
	// Values are the policies' images by policy name (NS:NAME's NAME).
	Values map[string]string
}

// ChangeResult groups the changes as Flux's template data does.
type ChangeResult struct {
	// Changes in file order.
	Changes []Change
	// FileChanges: file → setter → changes.
	FileChanges map[string]map[string][]Change
	// Objects: object → changes.
	Objects map[ObjectRef][]Change
}

func newChangeResult(changes []Change) ChangeResult {
	r := ChangeResult{Changes: changes, FileChanges: map[string]map[string][]Change{}, Objects: map[ObjectRef][]Change{}}
	for _, c := range changes {
		if r.FileChanges[c.File] == nil {
			r.FileChanges[c.File] = map[string][]Change{}
		}
		r.FileChanges[c.File][c.Setter] = append(r.FileChanges[c.File][c.Setter], c)
		r.Objects[c.Object] = append(r.Objects[c.Object], c)
	}
	return r
}

// errMessageTooLong stops a template whose output passes MaxMessageBytes.
var errMessageTooLong = errors.New("the commit message is longer than 64 KiB")

type boundedBuffer struct{ bytes.Buffer }

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > MaxMessageBytes {
		return 0, errMessageTooLong
	}
	return b.Buffer.Write(p)
}

// Message renders tmpl (DefaultMessageTemplate when empty) over the run's changes.
func Message(tmpl, automation string, changes []Change, values Values) (string, error) {
	if strings.TrimSpace(tmpl) == "" {
		tmpl = DefaultMessageTemplate
	}
	t, err := template.New("commit").Option("missingkey=error").Parse(tmpl)
	if err != nil {
		return "", fmt.Errorf("parsing messageTemplate: %w", err)
	}
	data := TemplateData{AutomationObject: automation, Changed: newChangeResult(changes), Values: map[string]string{}}
	for key, ref := range values {
		_, name, _ := strings.Cut(key, ":")
		data.Values[name] = fullRef(ref)
	}
	var out boundedBuffer
	if err := t.Execute(&out, data); err != nil {
		return "", fmt.Errorf("executing messageTemplate: %w", err)
	}
	msg := strings.TrimSpace(out.String())
	if msg == "" {
		return "", errors.New("messageTemplate renders an empty message")
	}
	return msg + "\n", nil
}
