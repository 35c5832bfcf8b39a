package drift

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// hashKey keys the value hashes. It is random per process: a hash tells two values
// apart within this process and nothing else — it cannot be matched against guesses
// of a value (a short Secret, say) anywhere the hash might end up.
var hashKey = func() []byte {
	k := make([]byte, sha256.Size)
	if _, err := rand.Read(k); err != nil {
		panic("drift: reading random bytes: " + err.Error())
	}
	return k
}()

// valueHash returns a short keyed hash (16 hex digits) of v as JSON (map keys sorted,
// so equal values hash equal), or "" when the location holds no value.
func valueHash(l location) string {
	if !l.found {
		return ""
	}
	b, err := json.Marshal(l.value)
	if err != nil {
		// Not JSON (cannot happen for an unstructured object); still hash something
		// that differs per value type rather than fail the diff.
		b = []byte("unencodable")
	}
	mac := hmac.New(sha256.New, hashKey)
	mac.Write(b)
	return hex.EncodeToString(mac.Sum(nil)[:8])
}
