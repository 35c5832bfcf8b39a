package sopsfile

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// errValue is the one error of a value that does not decrypt: nothing of the value (or
// of why it failed) is told, as the value is a secret.
var errValue = errors.New("a value does not decrypt with the data key")

// ivSize is the nonce length SOPS uses for AES-GCM (longer than GCM's standard 12).
const ivSize = 32

// decryptValue decrypts one SOPS value, ENC[AES256_GCM,data:…,iv:…,tag:…,type:…], with
// key, additional data ad (the value's path, "a:b:c:", or the MAC's lastmodified),
// into its type: string, int, float64, bool, time.Time or Comment. The empty string is SOPS'
// encryption of the empty string.
func decryptValue(value string, key []byte, ad string) (any, error) {
	if value == "" {
		return "", nil
	}
	data, iv, tag, typ, ok := parseValue(value)
	if !ok {
		return nil, errValue
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, errValue
	}
	gcm, err := cipher.NewGCMWithNonceSize(block, len(iv))
	if err != nil {
		return nil, errValue
	}
	plain, err := gcm.Open(nil, iv, append(data, tag...), []byte(ad))
	if err != nil {
		return nil, errValue
	}
	s := string(plain)
	switch typ {
	case "str":
		return s, nil
	case "int":
		i, err := strconv.Atoi(s)
		if err != nil {
			return nil, errValue
		}
		return i, nil
	case "float":
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, errValue
		}
		return f, nil
	case "bool":
		b, err := strconv.ParseBool(s)
		if err != nil {
			return nil, errValue
		}
		return b, nil
	case "time":
		var tm time.Time
		if err := tm.UnmarshalText(plain); err != nil {
			return nil, errValue
		}
		return tm, nil
	case "comment":
		return Comment{Value: s}, nil
	default:
		return nil, errValue
	}
}

// parseValue splits an encrypted value into its parts. Like SOPS, it reads the prefix
// up to the last field's closing bracket and the fields greedily.
func parseValue(value string) (data, iv, tag []byte, typ string, ok bool) {
	rest, found := strings.CutPrefix(value, "ENC[AES256_GCM,data:")
	if !found {
		return nil, nil, nil, "", false
	}
	// The fields are base64 (no commas), so the separators are unambiguous.
	d, rest, found1 := strings.Cut(rest, ",iv:")
	v, rest, found2 := strings.Cut(rest, ",tag:")
	t, rest, found3 := strings.Cut(rest, ",type:")
	end := strings.LastIndex(rest, "]")
	if !found1 || !found2 || !found3 || end <= 0 {
		return nil, nil, nil, "", false
	}
	var err error
	if data, err = base64.StdEncoding.DecodeString(d); err != nil {
		return nil, nil, nil, "", false
	}
	if iv, err = base64.StdEncoding.DecodeString(v); err != nil || len(iv) == 0 {
		return nil, nil, nil, "", false
	}
	if tag, err = base64.StdEncoding.DecodeString(t); err != nil {
		return nil, nil, nil, "", false
	}
	return data, iv, tag, rest[:end], true
}

// encryptValue encrypts v (string, int, float64, bool, time.Time or Comment) as SOPS does, with a
// fresh random IV.
func encryptValue(v any, key []byte, ad string) (string, error) {
	var plain []byte
	var typ string
	switch v := v.(type) {
	case string:
		if v == "" {
			return "", nil
		}
		plain, typ = []byte(v), "str"
	case int:
		plain, typ = []byte(strconv.Itoa(v)), "int"
	case float64:
		plain, typ = []byte(strconv.FormatFloat(v, 'f', -1, 64)), "float"
	case bool:
		plain, typ = macBytes(v), "bool"
	case time.Time:
		plain, typ = macBytes(v), "time"
	case Comment:
		if v.Value == "" {
			return "", nil
		}
		plain, typ = []byte(v.Value), "comment"
	default:
		return "", fmt.Errorf("a value of type %T cannot be encrypted", v)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return "", err
	}
	gcm, err := cipher.NewGCMWithNonceSize(block, ivSize)
	if err != nil {
		return "", err
	}
	iv := make([]byte, ivSize)
	if _, err := rand.Read(iv); err != nil {
		return "", err
	}
	out := gcm.Seal(nil, iv, plain, []byte(ad))
	n := len(out) - gcm.Overhead()
	enc := base64.StdEncoding.EncodeToString
	return "ENC[AES256_GCM,data:" + enc(out[:n]) + ",iv:" + enc(iv) + ",tag:" + enc(out[n:]) + ",type:" + typ + "]", nil
}

// macBytes is what the MAC hashes for a value (SOPS writes booleans as Python did).
func macBytes(v any) []byte {
	switch v := v.(type) {
	case string:
		return []byte(v)
	case int:
		return []byte(strconv.Itoa(v))
	case float64:
		return []byte(strconv.FormatFloat(v, 'f', -1, 64))
	case bool:
		if v {
			return []byte("True")
		}
		return []byte("False")
	case time.Time:
		b, _ := v.MarshalText() // fails only for years outside 0-9999, which YAML cannot write
		return b
	}
	return nil
}
