package render

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fluxcd/pkg/ssa/utils"
	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/decrypt"
	"github.com/gitsync-dev/gitsync/internal/yamlbudget"
)

// sopsMarker is in every SOPS-encrypted file (its MAC at least is encrypted): files
// without it are passed on untouched, at the cost of one scan.
var sopsMarker = []byte("ENC[AES256_GCM,")

// ReadKeys reads the decryption Secret name of an Application of namespace ns through
// c (the Application's identity, or a person's): its *.agekey and *.asc entries. A
// missing Secret is a *ValuesError. Errors name the Secret, never its content.
func ReadKeys(ctx context.Context, c client.Reader, ns, name string) (decrypt.KeySource, error) {
	sec := &corev1.Secret{}
	err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sec)
	if apierrors.IsNotFound(err) {
		return nil, &ValuesError{fmt.Errorf("spec.decryption.secretRef: Secret %s/%s not found", ns, name)}
	}
	if err != nil {
		return nil, fmt.Errorf("reading the decryption Secret %s/%s: %w", ns, name, err)
	}
	keys, err := decrypt.NewKeys(sec.Data)
	if err != nil {
		return nil, &ValuesError{fmt.Errorf("decryption Secret %s/%s: %w", ns, name, err)}
	}
	return keys, nil
}

// decryption is spec.decryption for one render: it decrypts the SOPS files the render
// reads (build.Filter) and the SOPS documents it produces, or — a preview that keeps
// them encrypted — notes them. It learns the plain values it produced, for masking.
type decryption struct {
	app *gitsyncv1.Application
	// dec is nil when the keys are not at hand: offline, or kept encrypted.
	dec  *decrypt.Decryptor
	keep bool
	// budget counts the YAML of the SOPS files this render decrypts, together: each file
	// is also held to the budget alone by decrypt.
	budget *yamlbudget.Budget

	mu        sync.Mutex
	encrypted []string // what a preview left encrypted
	// kept are the SOPS files a preview left encrypted: an object made of one of them
	// (its document, or a Secret entry holding it) is that file, not one more thing.
	kept      [][]byte
	sensitive map[string]bool
}

// newDecryption returns the decryption of app's render: nil without spec.decryption;
// with keys read through cluster.Keys when it is set (a missing Secret fails the render
// even when nothing is encrypted, so a sync fails the same way every time), or else a
// decryption that refuses the first encrypted file (or keeps it, with keep).
func newDecryption(ctx context.Context, app *gitsyncv1.Application, cluster *Cluster, keep bool) (*decryption, error) {
	spec := app.Spec.Decryption
	if spec == nil {
		return nil, nil
	}
	if spec.Provider != gitsyncv1.DecryptionProviderSOPS {
		return nil, fmt.Errorf("spec.decryption.provider %q: only %q is supported", spec.Provider, gitsyncv1.DecryptionProviderSOPS)
	}
	d := &decryption{app: app, keep: keep, sensitive: map[string]bool{}, budget: yamlbudget.New(yamlbudget.MaxValues)}
	if keep || cluster.Keys == nil {
		return d, nil
	}
	keys, err := cluster.Keys(ctx, spec.SecretRef.Name)
	if err != nil {
		return nil, err
	}
	if d.dec, err = decrypt.NewDecryptor(keys); err != nil {
		return nil, err
	}
	return d, nil
}

// file decrypts one file the render reads (rel: its path in the checkout, or in the
// chart): a YAML stream's SOPS documents (Manifests), another format as a whole (File).
// Either checks the MAC in full.
func (d *decryption) file(rel string, data []byte) ([]byte, error) {
	if !bytes.Contains(data, sopsMarker) {
		return data, nil
	}
	if d.keep {
		d.mu.Lock()
		seen := d.inKeptFiles(data)
		d.kept = append(d.kept, data)
		d.mu.Unlock()
		if !seen {
			d.note(rel)
		}
		return data, nil
	}
	if d.dec == nil {
		return nil, d.offline(rel)
	}
	// Every format but binary is read as YAML or is no YAML at all (dotenv, INI), which
	// the budget passes; JSON is YAML.
	if err := d.budget.Check(rel, data); err != nil {
		return nil, fmt.Errorf("decrypting %w", err)
	}
	var plain []byte
	var err error
	switch strings.ToLower(path.Ext(rel)) {
	case ".yaml", ".yml":
		plain, err = d.dec.Manifests(rel, data)
	default:
		plain, err = d.dec.File(rel, data)
	}
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(plain, data) {
		d.learn(rel, data, plain)
	}
	return plain, nil
}

// objects decrypts what is still encrypted among the rendered objects (a Secret entry
// holding an encrypted file), or notes it. A SOPS document no file filter decrypted (one
// without a MAC, or in a file not read as SOPS) is refused by decrypt: its MAC can only
// be checked over its file's bytes.
func (d *decryption) objects(objs []*unstructured.Unstructured) error {
	var left []int
	for i, obj := range objs {
		if decrypt.IsEncrypted(obj) || (obj.GetKind() == "Secret" && secretHoldsSOPS(obj)) {
			left = append(left, i)
		}
	}
	if len(left) == 0 {
		return nil
	}
	if d.keep {
		for _, i := range left {
			if !d.fromKeptFile(objs[i]) {
				d.note(utils.FmtUnstructured(objs[i]))
			}
		}
		return nil
	}
	if d.dec == nil {
		return d.offline(utils.FmtUnstructured(objs[left[0]]))
	}
	some := make([]*unstructured.Unstructured, len(left))
	for j, i := range left {
		some[j] = objs[i]
	}
	before := make([]*unstructured.Unstructured, len(some))
	for j, o := range some {
		before[j] = o.DeepCopy()
	}
	if err := d.dec.Objects(some, nil); err != nil {
		return err
	}
	for j := range some {
		d.learnObject(before[j].Object, some[j].Object)
	}
	return nil
}

// encToken is one SOPS-encrypted value.
var encToken = regexp.MustCompile(`ENC\[AES256_GCM,[^\]]*\]`)

// inKeptFiles tells whether every SOPS-encrypted value in data is in a file the preview
// already noted: then data (a chart's rendered template, an object of that file, a
// Secret generated from it) is that file again, not one more thing left encrypted.
func (d *decryption) inKeptFiles(data []byte) bool {
	tokens := encToken.FindAll(data, -1)
	if len(tokens) == 0 {
		return false
	}
	for _, tok := range tokens {
		found := false
		for _, f := range d.kept {
			if bytes.Contains(f, tok) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// fromKeptFile is inKeptFiles for an object: its fields, and the decoded values of a
// Secret's data.
func (d *decryption) fromKeptFile(obj *unstructured.Unstructured) bool {
	data, err := json.Marshal(obj.Object)
	if err != nil {
		return false
	}
	m, _ := obj.Object["data"].(map[string]any)
	for _, v := range m {
		s, _ := v.(string)
		if plain, err := base64.StdEncoding.DecodeString(s); err == nil {
			data = append(append(data, '\n'), plain...)
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.inKeptFiles(data)
}

// offline is the error for an encrypted file or object without the keys.
func (d *decryption) offline(what string) error {
	return fmt.Errorf("%s is SOPS-encrypted and the decryption Secret %s/%s is read from the cluster: "+
		"render with a cluster and the right to read it (gitsync build|diff --decrypt)",
		what, d.app.Namespace, d.app.Spec.Decryption.SecretRef.Name)
}

func (d *decryption) note(what string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.encrypted = append(d.encrypted, what)
}

// refuseEncrypted is the check of a render without spec.decryption: a SOPS document
// would be applied as ciphertext (or refused by the API server for its "sops" field).
func refuseEncrypted(objs []*unstructured.Unstructured) error {
	for _, obj := range objs {
		if decrypt.IsEncrypted(obj) {
			return fmt.Errorf("%s is SOPS-encrypted and spec.decryption is not set", utils.FmtUnstructured(obj))
		}
	}
	return nil
}

// secretHoldsSOPS tells whether a Secret's data or stringData may hold a SOPS file.
func secretHoldsSOPS(obj *unstructured.Unstructured) bool {
	for _, field := range []string{"data", "stringData"} {
		m, _ := obj.Object[field].(map[string]any)
		for _, v := range m {
			s, _ := v.(string)
			if field == "data" && len(s) > 0 {
				// "ENC[AES256_GCM," in base64 at any of the three alignments.
				if strings.Contains(s, "RU5DW0FFUzI1Nl9HQ00s") || strings.Contains(s, "VOQ1tBRVMyNTZfR0NNL") || strings.Contains(s, "FTkNbQUVTMjU2X0dDTS") {
					return true
				}
				continue
			}
			if strings.Contains(s, string(sopsMarker)) {
				return true
			}
		}
	}
	return false
}

// sorted returns the keys of set, sorted.
func sorted(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
