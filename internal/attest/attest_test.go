package attest

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func ecKey(t *testing.T) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// deployment is an applied object as the API server returns it: gitsync's Apply entry
// owns spec.replicas and the container's image; kubectl-edit owns nothing yet.
func deployment(image string, replicas int64, editor string) *unstructured.Unstructured {
	managed := []any{map[string]any{"manager": "gitsync", "operation": "Apply", "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
		"fieldsV1": map[string]any{"f:spec": map[string]any{"f:replicas": map[string]any{},
			"f:template": map[string]any{"f:spec": map[string]any{"f:containers": map[string]any{
				`k:{"name":"web"}`: map[string]any{".": map[string]any{}, "f:name": map[string]any{}, "f:image": map[string]any{}}}}}}}}}
	if editor != "" {
		managed = append(managed, map[string]any{"manager": editor, "operation": "Update", "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
			"fieldsV1": map[string]any{"f:spec": map[string]any{"f:template": map[string]any{"f:spec": map[string]any{"f:containers": map[string]any{
				`k:{"name":"web"}`: map[string]any{"f:image": map[string]any{}}}}}}}})
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "team", "managedFields": managed},
		"spec": map[string]any{"replicas": replicas, "template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "web", "image": image}}}}},
	}}
}

func sync1(t *testing.T, objs ...*unstructured.Unstructured) Sync {
	s := Sync{Application: Ref{Namespace: "team", Name: "web"}, Source: SourceRef{Kind: "GitRepository", Namespace: "team", Name: "repo"},
		Revision: "main@sha1:0123456789012345678901234567890123456789", Signer: "openpgp:3AA5C34371567BD2", Chart: &Chart{Name: "web", Version: "1.0.0", ValuesDigest: "sha256:00"},
		SyncedAt: time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)}
	for _, o := range objs {
		rec, err := Record(o)
		if err != nil {
			t.Fatal(err)
		}
		s.Objects = append(s.Objects, rec)
	}
	return s
}

func TestSignVerifyRoundTrip(t *testing.T) {
	for name, signer := range map[string]func() any{
		"ecdsa":   func() any { return ecKey(t) },
		"ed25519": func() any { _, k, _ := ed25519.GenerateKey(rand.Reader); return k },
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			der, err := x509.MarshalPKCS8PrivateKey(signer())
			g.Expect(err).NotTo(HaveOccurred())
			key, err := ParsePrivateKey(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil)
			g.Expect(err).NotTo(HaveOccurred())
			env, digest, err := Make(context.Background(), key, sync1(t, deployment("nginx:1", 2, "")))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(digest).To(Equal(Digest(env)))

			pubPEM, err := key.MarshalPublicKey()
			g.Expect(err).NotTo(HaveOccurred())
			pub, err := ParsePublicKey(pubPEM)
			g.Expect(err).NotTo(HaveOccurred())
			got, err := Verify(context.Background(), pub, env)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Predicate.Revision).To(Equal("main@sha1:0123456789012345678901234567890123456789"))
			g.Expect(got.Predicate.Chart.Version).To(Equal("1.0.0"))
			g.Expect(got.Predicate.Signer).To(Equal("openpgp:3AA5C34371567BD2"))
			g.Expect(got.Predicate.Objects).To(HaveLen(1))
			g.Expect(got.Subjects).To(HaveKeyWithValue("apps/v1/Deployment/team/web", got.Predicate.Objects[0].Digest()))

			var raw map[string]any
			g.Expect(json.Unmarshal(env, &raw)).To(Succeed())
			g.Expect(raw).To(HaveKeyWithValue("payloadType", PayloadType))
		})
	}
}

func TestVerifyRefusesAnotherKeyAndTampering(t *testing.T) {
	g := NewWithT(t)
	der, _ := x509.MarshalPKCS8PrivateKey(ecKey(t))
	key, err := ParsePrivateKey(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil)
	g.Expect(err).NotTo(HaveOccurred())
	other, err := newPublicKey(ecKey(t).Public())
	g.Expect(err).NotTo(HaveOccurred())
	env, _, err := Make(context.Background(), key, sync1(t, deployment("nginx:1", 2, "")))
	g.Expect(err).NotTo(HaveOccurred())

	_, err = Verify(context.Background(), other, env)
	g.Expect(errors.Is(err, ErrForged)).To(BeTrue(), "%v", err)

	// A payload changed after signing (another revision) fails the right key too.
	forged := sync1(t, deployment("nginx:1", 2, ""))
	forged.Revision = "main@sha1:ffffffffffffffffffffffffffffffffffffffff"
	st, err := Statement(Predicate{Application: forged.Application, Revision: forged.Revision, Objects: forged.Objects})
	g.Expect(err).NotTo(HaveOccurred())
	var e map[string]any
	g.Expect(json.Unmarshal(env, &e)).To(Succeed())
	e["payload"] = st
	tampered, _ := json.Marshal(e)
	_, err = Verify(context.Background(), key.PublicKey, tampered)
	g.Expect(err).To(HaveOccurred())
}

func TestCosignEncryptedKey(t *testing.T) {
	g := NewWithT(t)
	pemBytes, err := EncryptPrivateKey(ecKey(t), []byte("s3cret"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(pemBytes)).To(HavePrefix("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----"))

	key, err := ParsePrivateKey(pemBytes, []byte("s3cret"))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = ParsePrivateKey(pemBytes, []byte("wrong"))
	g.Expect(err).To(MatchError(ContainSubstring("wrong password")))

	// The Secret cosign generate-key-pair k8s://… writes.
	pub, _ := key.MarshalPublicKey()
	s := &corev1.Secret{Data: map[string][]byte{SecretPrivateKey: pemBytes, SecretPassword: []byte("s3cret"), SecretPublicKey: pub}}
	fromSecret, err := KeyFromSecret(s)
	g.Expect(err).NotTo(HaveOccurred())
	trusted, err := PublicKeyFromSecret(s)
	g.Expect(err).NotTo(HaveOccurred())
	env, _, err := Make(context.Background(), fromSecret, sync1(t))
	g.Expect(err).NotTo(HaveOccurred())
	got, err := Verify(context.Background(), trusted, env)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Subjects).To(HaveKey("empty"))
}

func TestCompareNamesFieldAndWriter(t *testing.T) {
	g := NewWithT(t)
	rec, err := Record(deployment("nginx:1", 2, ""))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rec.Fields).To(HaveLen(3)) // replicas, the container's name and image

	same, err := Compare(rec, rec.Digest(), deployment("nginx:1", 2, ""), false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(same).To(BeNil())

	edited, err := Compare(rec, rec.Digest(), deployment("nginx:2", 2, "kubectl-edit"), false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(edited.Fields).To(Equal([]DriftedField{{Path: "/spec/template/spec/containers/name=web/image", Managers: []string{"kubectl-edit"}}}))

	// Fields withheld: the object-level digest still tells.
	unnamed, err := Compare(rec, rec.Digest(), deployment("nginx:2", 2, ""), true)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(unnamed.Unnamed).To(BeTrue())

	missing, err := Compare(rec, rec.Digest(), nil, false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(missing.Missing).To(BeTrue())
}

func TestSecretValuesAreNotHashed(t *testing.T) {
	g := NewWithT(t)
	secret := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "s", "namespace": "team", "managedFields": []any{map[string]any{
			"manager": "gitsync", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1",
			"fieldsV1": map[string]any{"f:data": map[string]any{"f:password": map[string]any{}}, "f:type": map[string]any{}}}}},
		"data": map[string]any{"password": "aHVudGVyMg=="}, "type": "Opaque",
	}}
	rec, err := Record(secret)
	g.Expect(err).NotTo(HaveOccurred())
	b, _ := json.Marshal(rec)
	g.Expect(string(b)).To(ContainSubstring(`"d":"present"`))
	g.Expect(string(b)).NotTo(ContainSubstring("aHVudGVyMg"))
}

func TestConfigMapKeepsTheNewest(t *testing.T) {
	g := NewWithT(t)
	cm := &corev1.ConfigMap{}
	var digests []string
	for i := range Keep + 2 {
		env := []byte(fmt.Sprintf(`{"n":%d}`, i))
		g.Expect(Add(cm, env)).To(Succeed())
		digests = append(digests, Digest(env))
	}
	g.Expect(cm.BinaryData).To(HaveLen(Keep))
	newest, err := Find(cm, "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(newest)).To(Equal(fmt.Sprintf(`{"n":%d}`, Keep+1)))
	_, err = Find(cm, digests[0])
	g.Expect(err).To(MatchError(ErrNotFound))
	got, err := Find(cm, digests[Keep])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(Digest(got)).To(Equal(digests[Keep]))

	g.Expect(Add(cm, make([]byte, 0))).To(Succeed())
	huge := make([]byte, 4*MaxEnvelope)
	_, _ = rand.Read(huge)
	g.Expect(Add(cm, huge)).To(MatchError(ContainSubstring("over the bound")))
	g.Expect(len(ConfigMapName(string(make([]byte, 300))))).To(BeNumerically("<=", 253))
}

// An applied set too large to name every field within MaxEnvelope is attested with the
// fields withheld: the subjects still cover them, and a changed object is still told.
func TestLargeSetWithholdsFields(t *testing.T) {
	g := NewWithT(t)
	der, _ := x509.MarshalPKCS8PrivateKey(ecKey(t))
	key, err := ParsePrivateKey(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil)
	g.Expect(err).NotTo(HaveOccurred())
	s := sync1(t)
	random := func() string {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		return fmt.Sprintf("sha256:%x", b)
	}
	for i := range 3000 {
		o := Object{Version: "v1", Kind: "ConfigMap", Namespace: "team", Name: fmt.Sprintf("cm-%d", i)}
		for j := range 8 {
			o.Fields = append(o.Fields, Field{Path: []string{"f:data", fmt.Sprintf("f:k%d", j)}, Digest: random()})
		}
		s.Objects = append(s.Objects, o)
	}
	rec, err := Record(deployment("nginx:1", 2, ""))
	g.Expect(err).NotTo(HaveOccurred())
	s.Objects = append(s.Objects, rec)

	env, _, err := Make(context.Background(), key, s)
	g.Expect(err).NotTo(HaveOccurred())
	cm := &corev1.ConfigMap{}
	g.Expect(Add(cm, env)).To(Succeed())
	got, err := Verify(context.Background(), key.PublicKey, env)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Predicate.FieldsWithheld).To(BeTrue())
	g.Expect(got.Subjects).To(HaveLen(3001))
	var web Object
	for _, o := range got.Predicate.Objects {
		g.Expect(o.Fields).To(BeEmpty())
		if o.Kind == "Deployment" {
			web = o
		}
	}
	same, err := Compare(web, got.Subjects[web.ID()], deployment("nginx:1", 2, ""), true)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(same).To(BeNil())
	changed, err := Compare(web, got.Subjects[web.ID()], deployment("nginx:2", 2, ""), true)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed.Unnamed).To(BeTrue())
}

// A sync of several sources: the predicate lists each with its revision and signer, and
// has no single source.
func TestSeveralSourcesRoundTrip(t *testing.T) {
	g := NewWithT(t)
	der, _ := x509.MarshalPKCS8PrivateKey(ecKey(t))
	key, err := ParsePrivateKey(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil)
	g.Expect(err).NotTo(HaveOccurred())
	s := sync1(t, deployment("nginx:1", 2, ""))
	s.Source = SourceRef{}
	s.Sources = []Source{
		{SourceRef: SourceRef{Kind: "HelmRepository", Namespace: "team", Name: "charts"}, Revision: "web@1.0.0"},
		{SourceRef: SourceRef{Kind: "GitRepository", Namespace: "team", Name: "repo"}, Path: "./extra",
			Revision: "main@sha1:0123456789012345678901234567890123456789", Signer: "openpgp:3AA5C34371567BD2"},
	}
	s.Revision = "HelmRepository/charts@web@1.0.0;GitRepository/repo@main@sha1:0123456789012345678901234567890123456789"
	env, _, err := Make(context.Background(), key, s)
	g.Expect(err).NotTo(HaveOccurred())
	pubPEM, err := key.MarshalPublicKey()
	g.Expect(err).NotTo(HaveOccurred())
	pub, err := ParsePublicKey(pubPEM)
	g.Expect(err).NotTo(HaveOccurred())
	got, err := Verify(context.Background(), pub, env)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Predicate.Sources).To(Equal(s.Sources))
	g.Expect(got.Predicate.Source).To(BeZero())
	var raw struct{ Payload []byte }
	g.Expect(json.Unmarshal(env, &raw)).To(Succeed())
	g.Expect(string(raw.Payload)).To(ContainSubstring(`"sources":[`))
	g.Expect(string(raw.Payload)).NotTo(ContainSubstring(`"source":`))
}
