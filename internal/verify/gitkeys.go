package verify

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"golang.org/x/crypto/ssh"
)

const pgpPublicKeyBlock = "-----BEGIN PGP PUBLIC KEY BLOCK-----"

// GitKeys are the keys a Git commit or tag may be signed with.
type GitKeys struct {
	openpgp openpgp.EntityList
	ssh     []allowedSigner
}

// allowedSigner is one line of an SSH allowed_signers file.
type allowedSigner struct {
	principals string
	key        ssh.PublicKey
}

// ParseGitKeys reads the data of a verification Secret: each value is either one or more
// armored OpenPGP public keys ("-----BEGIN PGP PUBLIC KEY BLOCK-----"), or lines of an SSH
// allowed_signers file as git's gpg.ssh.allowedSignersFile takes them
// ("principals [namespaces=\"git\"] key-type base64 [comment]"; blank lines and # comments
// skipped). An entry whose namespaces leave out "git" is not used; the options
// cert-authority, valid-after and valid-before are refused, since a key that would only
// be trusted under them must not be trusted without them. At least one key is required.
func ParseGitKeys(data map[string][]byte) (*GitKeys, error) {
	keys := &GitKeys{}
	names := make([]string, 0, len(data))
	for name := range data {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		v := data[name]
		if bytes.Contains(v, []byte(pgpPublicKeyBlock)) {
			list, err := readArmoredKeys(v)
			if err != nil {
				return nil, fmt.Errorf("reading OpenPGP keys in %q: %w", name, err)
			}
			keys.openpgp = append(keys.openpgp, list...)
			continue
		}
		signers, err := parseAllowedSigners(v)
		if err != nil {
			return nil, fmt.Errorf("reading allowed signers in %q: %w", name, err)
		}
		keys.ssh = append(keys.ssh, signers...)
	}
	if len(keys.openpgp) == 0 && len(keys.ssh) == 0 {
		return nil, fmt.Errorf("no OpenPGP public key or SSH allowed signer found")
	}
	return keys, nil
}

// parseAllowedSigners reads allowed_signers lines: the principals, then an
// authorized_keys line (options, key type, key, comment).
func parseAllowedSigners(b []byte) ([]allowedSigner, error) {
	var out []allowedSigner
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		principals, rest, ok := cutPrincipals(line)
		if !ok {
			return nil, fmt.Errorf("line %d: no key after the principals", i+1)
		}
		key, _, options, _, err := ssh.ParseAuthorizedKey([]byte(rest))
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		use, err := forGit(options)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		if use {
			out = append(out, allowedSigner{principals: principals, key: key})
		}
	}
	return out, nil
}

// cutPrincipals splits the first field (possibly double-quoted) from the rest of a line.
func cutPrincipals(line string) (principals, rest string, ok bool) {
	if strings.HasPrefix(line, `"`) {
		end := strings.Index(line[1:], `"`)
		if end < 0 {
			return "", "", false
		}
		principals, rest = line[1:end+1], line[end+2:]
	} else {
		principals, rest, ok = strings.Cut(line, " ")
		if !ok {
			principals, rest, ok = strings.Cut(line, "\t")
		}
		if !ok {
			return "", "", false
		}
	}
	rest = strings.TrimSpace(rest)
	return principals, rest, principals != "" && rest != ""
}

// forGit says whether an allowed_signers entry with these options may sign Git objects.
func forGit(options []string) (bool, error) {
	use := true
	for _, o := range options {
		name, value, _ := strings.Cut(o, "=")
		switch strings.ToLower(name) {
		case "namespaces":
			use = slices.Contains(strings.Split(strings.Trim(value, `"`), ","), "git")
		case "cert-authority", "valid-after", "valid-before":
			return false, fmt.Errorf("option %s is not supported", name)
		default:
			return false, fmt.Errorf("unknown option %s", name)
		}
	}
	return use, nil
}
