package sopsfile

import (
	"crypto/sha512"
	"errors"
	"fmt"
	"strings"
)

// Format is a SOPS file format.
type Format int

// The formats, as SOPS names them.
const (
	Binary Format = iota
	Dotenv
	INI
	JSON
	YAML
)

// FormatForPath is SOPS' choice of format by a file's name: .yaml/.yml, .json, .env,
// .ini, anything else binary.
func FormatForPath(name string) Format {
	switch {
	case strings.HasSuffix(name, ".yaml"), strings.HasSuffix(name, ".yml"):
		return YAML
	case strings.HasSuffix(name, ".json"):
		return JSON
	case strings.HasSuffix(name, ".env"):
		return Dotenv
	case strings.HasSuffix(name, ".ini"):
		return INI
	}
	return Binary
}

func (f Format) String() string {
	return [...]string{"binary", "dotenv", "INI", "JSON", "YAML"}[f]
}

// Errors of File.Decrypt. None of them says anything about a value.
var (
	// ErrValue: an encrypted value does not decrypt with the data key (a changed or
	// swapped ciphertext, or the wrong data key).
	ErrValue = errors.New("a value does not decrypt with its data key")
	// ErrMACKey: the MAC does not decrypt with the data key (a changed MAC or
	// lastmodified).
	ErrMACKey = errors.New("the MAC does not decrypt with the data key")
	// ErrMACMismatch: the MAC does not match the values (a changed value).
	ErrMACMismatch = errors.New("the MAC does not match the values")
	// ErrNoMAC: the metadata has no MAC, or an empty one. SOPS always writes one; without
	// it nothing binds the document's unencrypted values (kind, namespace, metadata) or
	// its set of values to the data key, so the document is refused before any value is
	// decrypted.
	ErrNoMAC = errors.New("the SOPS metadata has no MAC")
)

// File is a SOPS document as loaded: its branches (one per YAML document; one for the
// other formats) without the metadata, and the metadata.
type File struct {
	Format   Format
	Branches []Branch
	Metadata *Metadata
}

// Load reads an encrypted file in format (a binary file is read as its JSON envelope).
// A document without SOPS metadata is ErrNoMetadata. Other errors never quote the
// document.
func Load(data []byte, format Format) (*File, error) {
	var branches []Branch
	var err error
	switch format {
	case YAML:
		branches, err = loadYAML(data)
	case JSON, Binary:
		branches, err = loadJSON(data)
	case Dotenv:
		branches, err = loadDotenv(data)
	case INI:
		branches, err = loadINI(data)
	default:
		return nil, fmt.Errorf("unknown format %d", format)
	}
	if err != nil {
		return nil, err
	}
	if len(branches) == 0 {
		return nil, ErrNoMetadata
	}
	var md *Metadata
	switch format {
	case Dotenv:
		md, err = dotenvMetadata(branches)
	case INI:
		md, err = iniMetadata(branches)
	default:
		md, err = extractMetadata(branches)
	}
	if err != nil {
		return nil, err
	}
	return &File{Format: format, Branches: branches, Metadata: md}, nil
}

// macOnlyEncryptedInit starts the MAC of a document with mac_only_encrypted, so that it
// differs from the MAC over all values: the SHA-256 of "sops".
var macOnlyEncryptedInit = []byte{0x8a, 0x3f, 0xd2, 0xad, 0x54, 0xce, 0x66, 0x52, 0x7b, 0x10, 0x34, 0xf3, 0xd1, 0x47, 0xbe, 0x0b,
	0x0b, 0x97, 0x5b, 0x3b, 0xf4, 0x4f, 0x72, 0xc6, 0xfd, 0xad, 0xec, 0x81, 0x76, 0xf2, 0x7d, 0x69}

// Decrypt decrypts the values of f in place with the data key and checks the MAC, as
// SOPS does: that there is one, that it decrypts with the data key (bound to
// lastmodified) and that it is the SHA-512 of the values (all of them, or the encrypted
// ones with mac_only_encrypted) in the file's order. Errors are ErrNoMAC, ErrValue,
// ErrMACKey or ErrMACMismatch.
func (f *File) Decrypt(dataKey []byte) error {
	md := f.Metadata
	if md.MAC == "" {
		return ErrNoMAC
	}
	h := sha512.New()
	if md.MACOnlyEncrypted {
		h.Write(macOnlyEncryptedInit)
	}
	leaf := func(v any, path []string, comments [][]string) (any, error) {
		c, isComment := v.(Comment)
		enc := md.rules.encrypted(path, comments, isComment)
		out := v
		if enc {
			ad := strings.Join(path, ":") + ":"
			switch v := v.(type) {
			case Comment:
				// A comment that does not decrypt was written in the clear (older SOPS).
				if p, err := decryptValue(c.Value, dataKey, ad); err == nil {
					out = p
				}
			case string:
				p, err := decryptValue(v, dataKey, ad)
				if err != nil {
					return nil, ErrValue
				}
				out = p
			default:
				return nil, ErrValue // an encrypted value is always a string
			}
		}
		if !md.MACOnlyEncrypted || enc {
			if _, isComment := out.(Comment); !isComment {
				h.Write(macBytes(out))
			}
		}
		return out, nil
	}
	for _, b := range f.Branches {
		if err := walkBranch(b, nil, nil, leaf); err != nil {
			if errors.Is(err, ErrValue) {
				return ErrValue
			}
			return fmt.Errorf("%w: %v", ErrValue, err)
		}
	}
	stored, err := decryptValue(md.MAC, dataKey, md.LastModified)
	if err != nil {
		return ErrMACKey
	}
	if stored != any(fmt.Sprintf("%X", h.Sum(nil))) {
		return ErrMACMismatch
	}
	return nil
}

// Emit writes branches as a plain file in format: for Binary, the content of the
// envelope's data.
func Emit(branches []Branch, format Format) ([]byte, error) {
	if len(branches) == 0 {
		return nil, errors.New("no document")
	}
	switch format {
	case YAML:
		return emitYAML(branches)
	case JSON:
		return emitJSON(branches[0])
	case Dotenv:
		return emitDotenv(branches[0])
	case INI:
		return emitINI(branches[0])
	default:
		return emitBinary(branches)
	}
}
