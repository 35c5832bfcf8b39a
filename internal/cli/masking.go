package cli

import (
	"io"

	"github.com/gitsync-dev/gitsync/internal/redact"
)

// maskValues replaces every sensitive value (render.Result.Sensitive: decrypted values,
// variables from Secrets) in s with "***".
func maskValues(s string, sensitive []string) string { return redact.Values(s, sensitive...) }

// maskingWriter masks the sensitive values in each write; the callers write whole lines
// or documents, and sensitive values hold no newline.
type maskingWriter struct {
	w         io.Writer
	sensitive []string
}

func (m maskingWriter) Write(p []byte) (int, error) {
	if len(m.sensitive) == 0 {
		return m.w.Write(p)
	}
	if _, err := io.WriteString(m.w, maskValues(string(p), m.sensitive)); err != nil {
		return 0, err
	}
	return len(p), nil
}
