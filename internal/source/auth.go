package source

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
)

// Keys of a Secret's data that AuthFromSecret reads. Other keys are ignored.
const (
	SecretKeyUsername    = "username"
	SecretKeyPassword    = "password"
	SecretKeyBearerToken = "bearerToken"
	SecretKeyIdentity    = "identity"
	SecretKeyKnownHosts  = "known_hosts"
	SecretKeyCA          = "ca.crt"
)

// Auth holds the credentials for one repository.
//
// For HTTP(S) it is either Username+Password (basic) or BearerToken, plus an
// optional CA bundle. For SSH it is Identity (a PEM private key; Password, if
// set, is its passphrase) or Username+Password, and always KnownHosts: host
// keys are checked strictly.
type Auth struct {
	Username    string
	Password    string
	BearerToken string
	Identity    []byte
	KnownHosts  []byte
	CA          []byte
}

// AuthFromSecret builds an Auth from a Secret's data (see the SecretKey*
// constants). It returns nil, nil when data holds none of those keys. It
// refuses incomplete or ambiguous combinations and content that does not
// parse; its errors name the offending keys, never their values.
//
// Trailing newlines, which files turned into Secrets often carry, are removed
// from username, password and bearerToken.
func AuthFromSecret(data map[string][]byte) (*Auth, error) {
	a := &Auth{
		Username:    trimNewline(data[SecretKeyUsername]),
		Password:    trimNewline(data[SecretKeyPassword]),
		BearerToken: trimNewline(data[SecretKeyBearerToken]),
		Identity:    data[SecretKeyIdentity],
		KnownHosts:  data[SecretKeyKnownHosts],
		CA:          data[SecretKeyCA],
	}
	if a.empty() {
		return nil, nil
	}
	if err := a.validate(); err != nil {
		return nil, err
	}
	return a, nil
}

func trimNewline(b []byte) string {
	return strings.TrimRight(string(b), "\r\n")
}

func (a *Auth) empty() bool {
	return a.Username == "" && a.Password == "" && a.BearerToken == "" &&
		len(a.Identity) == 0 && len(a.KnownHosts) == 0 && len(a.CA) == 0
}

// validate checks combinations and parses keys, host keys and certificates.
// Error texts must not contain any value.
func (a *Auth) validate() error {
	hasIdentity := len(a.Identity) > 0
	switch {
	case a.Username != "" && a.Password == "" && !hasIdentity:
		return fmt.Errorf("%w: secret has %q but no %q", ErrAuthentication, SecretKeyUsername, SecretKeyPassword)
	case a.Password != "" && a.Username == "" && !hasIdentity:
		return fmt.Errorf("%w: secret has %q but no %q", ErrAuthentication, SecretKeyPassword, SecretKeyUsername)
	case a.BearerToken != "" && (a.Username != "" || a.Password != ""):
		return fmt.Errorf("%w: secret has both %q and %q/%q; use one", ErrAuthentication,
			SecretKeyBearerToken, SecretKeyUsername, SecretKeyPassword)
	case hasIdentity && len(a.KnownHosts) == 0:
		return fmt.Errorf("%w: secret has %q but no %q (host keys are always verified)", ErrAuthentication,
			SecretKeyIdentity, SecretKeyKnownHosts)
	}
	if hasIdentity {
		if err := a.checkIdentity(); err != nil {
			return err
		}
	}
	if len(a.KnownHosts) > 0 {
		if err := checkKnownHosts(a.KnownHosts); err != nil {
			return err
		}
	}
	if len(a.CA) > 0 && !x509.NewCertPool().AppendCertsFromPEM(a.CA) {
		return fmt.Errorf("%w: %q holds no PEM certificate", ErrAuthentication, SecretKeyCA)
	}
	return nil
}

// checkIdentity parses the identity, using Password as its passphrase when set.
func (a *Auth) checkIdentity() error {
	var err error
	if a.Password != "" {
		_, err = ssh.ParsePrivateKeyWithPassphrase(a.Identity, []byte(a.Password))
	} else {
		_, err = ssh.ParsePrivateKey(a.Identity)
	}
	if err != nil {
		var missing *ssh.PassphraseMissingError
		if errors.As(err, &missing) {
			return fmt.Errorf("%w: %q is passphrase protected and %q is empty", ErrAuthentication,
				SecretKeyIdentity, SecretKeyPassword)
		}
		// x/crypto's parse errors describe the format, not the key.
		return fmt.Errorf("%w: %q is not a usable private key: %s", ErrAuthentication,
			SecretKeyIdentity, withoutSecrets(err, a.Password).Error())
	}
	return nil
}

// checkKnownHosts parses every non-comment line of a known_hosts file.
func checkKnownHosts(content []byte) error {
	entries := 0
	for i, line := range bytes.Split(content, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		if _, _, _, _, _, err := ssh.ParseKnownHosts(line); err != nil {
			return fmt.Errorf("%w: %q line %d cannot be parsed", ErrAuthentication, SecretKeyKnownHosts, i+1)
		}
		entries++
	}
	if entries == 0 {
		return fmt.Errorf("%w: %q has no entries", ErrAuthentication, SecretKeyKnownHosts)
	}
	return nil
}

// secrets lists the values that must never appear in an error's text.
func (a *Auth) secrets() []string {
	if a == nil {
		return nil
	}
	return []string{a.Password, a.BearerToken}
}

// transportAuth maps a onto the go-git auth method for ep's protocol. tmpDir
// is where a known_hosts file is written for the moment it takes to parse it.
// An SSH endpoint always needs known_hosts and a key or password, as anonymous
// SSH would otherwise fall back to an agent and skip host key checks.
func transportAuth(ep *transport.Endpoint, a *Auth, tmpDir string, timeout time.Duration) (transport.AuthMethod, error) {
	switch ep.Protocol {
	case "http", "https":
		switch {
		case a == nil:
			return nil, nil
		case a.BearerToken != "":
			return &githttp.TokenAuth{Token: a.BearerToken}, nil
		case a.Username != "" && a.Password != "":
			return &githttp.BasicAuth{Username: a.Username, Password: a.Password}, nil
		}
		return nil, nil
	case "ssh":
		return sshAuth(ep, a, tmpDir, timeout)
	}
	return nil, nil
}

func sshAuth(ep *transport.Endpoint, a *Auth, tmpDir string, timeout time.Duration) (transport.AuthMethod, error) {
	if a == nil || len(a.KnownHosts) == 0 {
		return nil, fmt.Errorf("%w: an ssh url needs a secret with %q", ErrAuthentication, SecretKeyKnownHosts)
	}
	user := ep.User
	if user == "" {
		user = "git"
	}
	port := ep.Port
	if port <= 0 {
		port = gitssh.DefaultPort
	}
	hostPort := net.JoinHostPort(strings.Trim(ep.Host, "[]"), strconv.Itoa(port))

	db, err := knownHostsDB(a.KnownHosts, tmpDir)
	if err != nil {
		return nil, err
	}
	auth := &sshKnownHostsAuth{
		algorithms: db.HostKeyAlgorithms(hostPort),
		timeout:    timeout,
	}
	switch {
	case len(a.Identity) > 0:
		keys, err := gitssh.NewPublicKeys(user, a.Identity, a.Password)
		if err != nil {
			return nil, fmt.Errorf("%w: %q is not a usable private key", ErrAuthentication, SecretKeyIdentity)
		}
		keys.HostKeyCallback = db.HostKeyCallback()
		auth.AuthMethod = keys
	case a.Username != "" && a.Password != "":
		auth.AuthMethod = &gitssh.Password{
			User:                  a.Username,
			Password:              a.Password,
			HostKeyCallbackHelper: gitssh.HostKeyCallbackHelper{HostKeyCallback: db.HostKeyCallback()},
		}
	default:
		return nil, fmt.Errorf("%w: an ssh url needs a secret with %q (or %q and %q)", ErrAuthentication,
			SecretKeyIdentity, SecretKeyUsername, SecretKeyPassword)
	}
	return auth, nil
}

// knownHostsDB parses known_hosts content. The parsers only read files, so the
// content is written to a private temporary file that is removed at once.
func knownHostsDB(content []byte, tmpDir string) (hostKeyDB, error) {
	f, err := os.CreateTemp(tmpDir, ".tmp-known_hosts-*")
	if err != nil {
		return nil, fmt.Errorf("writing known_hosts: %w", err)
	}
	name := f.Name()
	defer os.Remove(name)
	_, werr := f.Write(content)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		return nil, fmt.Errorf("writing known_hosts: %w", err)
	}
	db, err := gitssh.NewKnownHostsDb(name)
	if err != nil {
		return nil, fmt.Errorf("%w: %q cannot be parsed", ErrAuthentication, SecretKeyKnownHosts)
	}
	return db, nil
}

// hostKeyDB is the part of skeema/knownhosts' HostKeyDB (returned by go-git)
// that is used here.
type hostKeyDB interface {
	HostKeyCallback() ssh.HostKeyCallback
	HostKeyAlgorithms(hostWithPort string) []string
}

// sshKnownHostsAuth completes a go-git SSH auth method with the host key
// algorithms known for the host (so that the server does not negotiate a key
// type that known_hosts lacks) and a dial timeout. go-git leaves both unset
// when a custom HostKeyCallback is given.
type sshKnownHostsAuth struct {
	gitssh.AuthMethod
	algorithms []string
	timeout    time.Duration
}

// ClientConfig implements gitssh.AuthMethod.
func (a *sshKnownHostsAuth) ClientConfig() (*ssh.ClientConfig, error) {
	cfg, err := a.AuthMethod.ClientConfig()
	if err != nil {
		return nil, err
	}
	if len(a.algorithms) > 0 {
		cfg.HostKeyAlgorithms = a.algorithms
	}
	cfg.Timeout = a.timeout
	return cfg, nil
}
