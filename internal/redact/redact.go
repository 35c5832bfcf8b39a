// Package redact takes secrets out of text that people see (conditions, events, logs,
// notifications, the UI): the credentials written into a URL, and given secret values.
// The one place these rules live.
package redact

import "strings"

// URL returns raw without the credentials of its user info: for a URL with a scheme
// (https://user:token@host/…, and https://token@host/…, where the user name is the
// secret), the whole user info goes; for an SSH URL (ssh://git@host/…) and the scp-like
// form (git@host:path) the user name stays, as it names an account, not a secret, and a
// password goes. Text that is not a URL comes back as it is.
func URL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw // scp-like user@host:path holds no password
	}
	at := strings.LastIndex(rest, "@")
	if slash := strings.Index(rest, "/"); at < 0 || (slash >= 0 && slash < at) {
		return raw
	}
	user, _, hasPassword := strings.Cut(rest[:at], ":")
	if strings.EqualFold(scheme, "ssh") {
		if !hasPassword {
			return raw
		}
		return scheme + "://" + user + rest[at:]
	}
	return scheme + "://" + rest[at+1:]
}

// Values replaces every occurrence of each non-empty value in s with "***", longest
// values first (so that a value containing another is not half replaced).
func Values(s string, values ...string) string {
	sorted := make([]string, 0, len(values))
	for _, v := range values {
		if v != "" {
			sorted = append(sorted, v)
		}
	}
	for i := 1; i < len(sorted); i++ {
		for j := i; j > 0 && len(sorted[j]) > len(sorted[j-1]); j-- {
			sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
		}
	}
	for _, v := range sorted {
		s = strings.ReplaceAll(s, v, "***")
	}
	return s
}
