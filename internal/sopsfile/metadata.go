package sopsfile

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ErrNoMetadata is returned by Load when the document has no SOPS metadata: it is not
// a SOPS file.
var ErrNoMetadata = errors.New("sops metadata not found")

// metadataKey is the key of SOPS' metadata in a document (and, with "_", the prefix of
// its flattened keys in dotenv files).
const metadataKey = "sops"

// Master key types, as SOPS names them in its metadata and its messages.
const (
	KeyAge     = "age"
	KeyPGP     = "pgp"
	KeyKMS     = "kms"
	KeyGCPKMS  = "gcp_kms"
	KeyHCKMS   = "hckms"
	KeyAzureKV = "azure_kv"
	KeyVault   = "hc_vault"
)

// MasterKey is one master key of a document with its copy of the data key (or, with
// several key groups, of the group's share of it).
type MasterKey struct {
	// Type is one of the Key… constants.
	Type string
	// ID names the key as SOPS does: an age recipient, an OpenPGP fingerprint, a KMS
	// ARN, a key URL.
	ID string
	// Encrypted is the data key encrypted for the key: age-armored for age,
	// ASCII-armored for OpenPGP.
	Encrypted string
}

// String is "type:id".
func (k MasterKey) String() string { return k.Type + ":" + k.ID }

// Metadata is a document's "sops" entry, as far as decryption needs it.
type Metadata struct {
	// Groups are the key groups: with one group every key holds the whole data key;
	// with several, each group holds a Shamir share and Threshold of them are needed.
	Groups    [][]MasterKey
	Threshold int
	// LastModified is the timestamp the MAC is bound to, as written (RFC 3339).
	LastModified string
	// MAC is the encrypted message authentication code.
	MAC string
	// MACOnlyEncrypted says the MAC covers the encrypted values only.
	MACOnlyEncrypted bool

	rules rules
}

// parseMetadata reads the metadata from m, the "sops" entry as plain Go values (maps,
// lists and scalars; the dotenv and INI stores hold every scalar as a string, which is
// read as SOPS' weakly typed decoding does).
func parseMetadata(m map[string]any) (*Metadata, error) {
	md := &Metadata{MAC: str(m["mac"]), MACOnlyEncrypted: boolean(m["mac_only_encrypted"])}
	lm, err := time.Parse(time.RFC3339, str(m["lastmodified"]))
	if err != nil {
		return nil, errors.New("sops.lastmodified is not an RFC 3339 time")
	}
	md.LastModified = lm.Format(time.RFC3339)
	if t := m["shamir_threshold"]; t != nil {
		n, err := strconv.Atoi(str(t))
		if err != nil {
			return nil, errors.New("sops.shamir_threshold is not a number")
		}
		md.Threshold = n
	}
	set := 0
	for _, k := range []string{"unencrypted_suffix", "encrypted_suffix", "unencrypted_regex", "encrypted_regex", "unencrypted_comment_regex", "encrypted_comment_regex"} {
		if str(m[k]) != "" {
			set++
		}
	}
	if set > 1 {
		return nil, errors.New("more than one of encrypted_suffix, unencrypted_suffix, encrypted_regex, unencrypted_regex, encrypted_comment_regex and unencrypted_comment_regex")
	}
	md.rules = rules{
		unencryptedSuffix:    str(m["unencrypted_suffix"]),
		encryptedSuffix:      str(m["encrypted_suffix"]),
		unencryptedRegex:     compileRule(str(m["unencrypted_regex"])),
		encryptedRegex:       compileRule(str(m["encrypted_regex"])),
		unencryptedCommentRe: compileRule(str(m["unencrypted_comment_regex"])),
		encryptedCommentRe:   compileRule(str(m["encrypted_comment_regex"])),
	}
	if set == 0 {
		md.rules.unencryptedSuffix = "_unencrypted"
	}
	group, err := keyGroup(m)
	if err != nil {
		return nil, err
	}
	if len(group) > 0 {
		md.Groups = [][]MasterKey{group}
		return md, nil
	}
	groups, _ := m["key_groups"].([]any)
	for _, g := range groups {
		gm, _ := g.(map[string]any)
		group, err := keyGroup(gm)
		if err != nil {
			return nil, err
		}
		md.Groups = append(md.Groups, group)
	}
	if len(md.Groups) == 0 {
		return nil, errors.New("no keys found in the sops metadata")
	}
	return md, nil
}

// keyGroup reads the master keys of one group, in SOPS' order of key types.
func keyGroup(m map[string]any) ([]MasterKey, error) {
	var out []MasterKey
	for _, kind := range []struct {
		typ string
		id  func(map[string]any) string
	}{
		{KeyKMS, kmsID},
		{KeyGCPKMS, field("resource_id")},
		{KeyHCKMS, field("key_id")},
		{KeyAzureKV, func(k map[string]any) string {
			return str(k["vault_url"]) + "/keys/" + str(k["name"]) + "/" + str(k["version"])
		}},
		{KeyVault, func(k map[string]any) string {
			return str(k["vault_address"]) + "/v1/" + str(k["engine_path"]) + "/keys/" + str(k["key_name"])
		}},
		{KeyPGP, field("fp")},
		{KeyAge, field("recipient")},
	} {
		list, _ := m[kind.typ].([]any)
		for _, e := range list {
			k, ok := e.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("a sops.%s entry is not a mapping", kind.typ)
			}
			if kind.typ != KeyAge {
				// SOPS refuses a key whose creation time does not parse.
				if _, err := time.Parse(time.RFC3339, str(k["created_at"])); err != nil {
					return nil, fmt.Errorf("a sops.%s entry has no valid created_at", kind.typ)
				}
			}
			out = append(out, MasterKey{Type: kind.typ, ID: kind.id(k), Encrypted: str(k["enc"])})
		}
	}
	return out, nil
}

func field(name string) func(map[string]any) string {
	return func(k map[string]any) string { return str(k[name]) }
}

// kmsID names an AWS KMS key as SOPS does: arn[+role], then |context (sorted
// key:value pairs) when there is one, and |context|profile when there is a profile.
func kmsID(k map[string]any) string {
	id := str(k["arn"])
	if r := str(k["role"]); r != "" {
		id += "+" + r
	}
	var pairs []string
	if ctx, ok := k["context"].(map[string]any); ok {
		for key, v := range ctx {
			pairs = append(pairs, key+":"+str(v))
		}
	}
	sort.Strings(pairs)
	ctx := strings.Join(pairs, ",")
	switch p := str(k["aws_profile"]); {
	case p != "":
		return id + "|" + ctx + "|" + p
	case ctx != "":
		return id + "|" + ctx
	}
	return id
}

// str is a scalar as a string (SOPS' weakly typed reading), "" for nil or a structure.
func str(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case int, float64:
		return fmt.Sprint(v)
	case bool:
		return strconv.FormatBool(v)
	case time.Time: // an unquoted timestamp in YAML metadata (SOPS quotes its own)
		return v.Format(time.RFC3339)
	}
	return ""
}

func boolean(v any) bool {
	switch v := v.(type) {
	case bool:
		return v
	case string:
		b, _ := strconv.ParseBool(v)
		return b
	case int:
		return v != 0
	}
	return false
}

// toGo turns a value of a document into plain Go values, comments left out.
func toGo(v any) any {
	switch v := v.(type) {
	case Branch:
		m := make(map[string]any, len(v))
		for _, item := range v {
			if k, ok := item.Key.(string); ok {
				m[k] = toGo(item.Value)
			}
		}
		return m
	case []any:
		out := make([]any, 0, len(v))
		for _, e := range v {
			if _, ok := e.(Comment); !ok {
				out = append(out, toGo(e))
			}
		}
		return out
	}
	return v
}

// extractMetadata removes the "sops" entry from every branch and reads the first
// branch's.
func extractMetadata(branches []Branch) (*Metadata, error) {
	meta, err := extractEntry(branches)
	if err != nil {
		return nil, err
	}
	mb, ok := meta.(Branch)
	if !ok {
		return nil, errors.New("the sops entry is not a mapping")
	}
	return parseMetadata(toGo(mb).(map[string]any))
}

// extractEntry removes the "sops" entry from every branch and returns the first
// branch's value.
func extractEntry(branches []Branch) (any, error) {
	var meta any
	found := false
	for bi, b := range branches {
		kept := b[:0]
		for _, item := range b {
			if item.Key == metadataKey {
				if bi == 0 {
					if found {
						return nil, errors.New("more than one sops entry")
					}
					found = true
					meta = item.Value
				}
				continue
			}
			kept = append(kept, item)
		}
		branches[bi] = kept
	}
	if !found {
		return nil, ErrNoMetadata
	}
	return meta, nil
}
