package helm

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"hash/adler32"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// minSecret is the shortest secret value (or transform of one) that is masked: shorter
// ones would mask ordinary words of the message.
const minSecret = 4

// RedactSecrets returns err with every secret value (of at least 4 bytes, and each line
// of a multi-line one) replaced by "*****", keeping errors.Is and errors.As working. For
// render errors that may quote values taken from valuesFrom Secrets. A template may
// transform a value before an error quotes it, so the forms the template functions
// give it are masked too: in any letter case (upper, lower, title), quoted (quote,
// toJson, printf "%q", urlquery), base64 and base32 encoded (b64enc, b32enc, with or
// without padding, URL alphabet too), base64 decoded (b64dec of a value that is
// base64), and hashed (sha1sum, sha256sum, sha512sum, md5 as hex, adler32sum).
func RedactSecrets(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	re := secretPattern(secrets)
	if re == nil {
		return err
	}
	msg := re.ReplaceAllLiteralString(err.Error(), "*****")
	if msg == err.Error() {
		return err
	}
	return &redacted{msg: msg, err: err}
}

// secretPattern matches, case-insensitively, every form of secrets that RedactSecrets
// masks, longest first; nil when there is none.
func secretPattern(secrets []string) *regexp.Regexp {
	seen := map[string]bool{}
	var forms []string
	add := func(v string) {
		if len(v) >= minSecret && !seen[v] {
			seen[v] = true
			forms = append(forms, v)
		}
	}
	for _, s := range secrets {
		values := []string{strings.TrimSpace(s)}
		for _, line := range strings.Split(s, "\n") {
			values = append(values, strings.TrimSpace(line))
		}
		for _, v := range values {
			if len(v) < minSecret {
				continue
			}
			for _, f := range transforms(v) {
				add(f)
			}
			if dec, ok := decodeBase64(v); ok {
				for _, f := range transforms(dec) {
					add(f)
				}
			}
		}
	}
	if len(forms) == 0 {
		return nil
	}
	sort.Slice(forms, func(i, j int) bool { return len(forms[i]) > len(forms[j]) })
	quoted := make([]string, len(forms))
	for i, f := range forms {
		quoted[i] = regexp.QuoteMeta(f)
	}
	return regexp.MustCompile("(?i)" + strings.Join(quoted, "|"))
}

// transforms are v and what the template functions that keep all of v make of it.
func transforms(v string) []string {
	b := []byte(v)
	s1, s256, s512, m5 := sha1.Sum(b), sha256.Sum256(b), sha512.Sum512(b), md5.Sum(b)
	out := []string{
		v,
		inner(strconv.Quote(v)),
		inner(strconv.QuoteToASCII(v)),
		url.QueryEscape(v),
		url.PathEscape(v),
		base64.RawStdEncoding.EncodeToString(b),
		base64.RawURLEncoding.EncodeToString(b),
		strings.TrimRight(base32.StdEncoding.EncodeToString(b), "="),
		hex.EncodeToString(b),
		hex.EncodeToString(s1[:]),
		hex.EncodeToString(s256[:]),
		hex.EncodeToString(s512[:]),
		hex.EncodeToString(m5[:]),
		strconv.FormatUint(uint64(adler32.Checksum(b)), 10),
	}
	if j, err := json.Marshal(v); err == nil {
		out = append(out, inner(string(j)))
	}
	return out
}

// inner is a quoted string without its quotes.
func inner(q string) string {
	if len(q) >= 2 {
		return q[1 : len(q)-1]
	}
	return q
}

// decodeBase64 is v decoded when v is base64 (any alphabet, padded or not) of text.
func decodeBase64(v string) (string, bool) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if dec, err := enc.DecodeString(v); err == nil && len(dec) >= minSecret && utf8.Valid(dec) {
			return string(dec), true
		}
	}
	return "", false
}

type redacted struct {
	msg string
	err error
}

func (r *redacted) Error() string { return r.msg }
func (r *redacted) Unwrap() error { return r.err }
