package source

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

func testIdentity(t *testing.T) (pemBytes []byte, pub ssh.PublicKey) {
	t.Helper()
	pk, sk, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(sk, "")
	if err != nil {
		t.Fatal(err)
	}
	pub, err = ssh.NewPublicKey(pk)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(block), pub
}

func testCA(t *testing.T) []byte {
	t.Helper()
	// A self-signed certificate is enough to exercise PEM parsing.
	pk, sk, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: bigOne(), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pk, sk)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestAuthFromSecret(t *testing.T) {
	identity, pub := testIdentity(t)
	knownHosts := []byte(knownhosts.Line([]string{"[127.0.0.1]:2222"}, pub) + "\n")
	ca := testCA(t)
	const password = "s3cr3t-password-value"
	const token = "s3cr3t-token-value"
	const user = "alice-user-value"

	tests := []struct {
		name    string
		data    map[string][]byte
		want    *Auth
		wantErr bool
	}{
		{name: "empty", data: nil, want: nil},
		{name: "unrelated keys only", data: map[string][]byte{"token": []byte("x")}, want: nil},
		{name: "basic", data: map[string][]byte{"username": []byte(user), "password": []byte(password + "\n")},
			want: &Auth{Username: user, Password: password}},
		{name: "bearer", data: map[string][]byte{"bearerToken": []byte(token)}, want: &Auth{BearerToken: token}},
		{name: "ssh", data: map[string][]byte{"identity": identity, "known_hosts": knownHosts},
			want: &Auth{Identity: identity, KnownHosts: knownHosts}},
		{name: "ca only", data: map[string][]byte{"ca.crt": ca}, want: &Auth{CA: ca}},
		{name: "basic with ca", data: map[string][]byte{"username": []byte(user), "password": []byte(password), "ca.crt": ca},
			want: &Auth{Username: user, Password: password, CA: ca}},
		{name: "username without password", data: map[string][]byte{"username": []byte(user)}, wantErr: true},
		{name: "password without username", data: map[string][]byte{"password": []byte(password)}, wantErr: true},
		{name: "basic and bearer", data: map[string][]byte{"username": []byte(user), "password": []byte(password), "bearerToken": []byte(token)}, wantErr: true},
		{name: "identity without known_hosts", data: map[string][]byte{"identity": identity}, wantErr: true},
		{name: "identity not a key", data: map[string][]byte{"identity": []byte(password), "known_hosts": knownHosts}, wantErr: true},
		{name: "known_hosts garbage", data: map[string][]byte{"identity": identity, "known_hosts": []byte(password)}, wantErr: true},
		{name: "ca garbage", data: map[string][]byte{"ca.crt": []byte(password)}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := AuthFromSecret(tt.data)
			if tt.wantErr {
				g.Expect(err).To(HaveOccurred())
				g.Expect(errors.Is(err, ErrAuthentication)).To(BeTrue())
				for _, v := range tt.data {
					g.Expect(err.Error()).NotTo(ContainSubstring(strings.TrimSpace(string(v))))
				}
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestRedact(t *testing.T) {
	g := NewWithT(t)
	base := errors.New("GET http://u:hunter2@host/x: token abc123 refused")
	err := withoutSecrets(classify(base), "hunter2", "abc123", "")
	g.Expect(err.Error()).To(Equal("GET http://u:***@host/x: token *** refused"))
	g.Expect(errors.Is(err, base)).To(BeTrue())
	g.Expect(withoutSecrets(base, "absent")).To(BeIdenticalTo(base))
	g.Expect(withoutSecrets(nil, "x")).To(BeNil())
}

func bigOne() *big.Int { return big.NewInt(1) }
