package decrypt

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/gitsync-dev/gitsync/internal/sopsfile"
	"github.com/gitsync-dev/gitsync/internal/yamlbudget"
)

// aliasBomb is a mapping of 8 lines whose aliases expand to 9^7 (4.8 million) values.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString("l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i <= 7; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", i-1), 9), ", "))
	}
	return b.String()
}

// allocated returns the bytes f allocated.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A SOPS file whose second or third document is an alias bomb is refused by the YAML
// budget, naming the file and the document, before the bomb is expanded: the SOPS
// reader used to check the first document only.
func TestBombPastTheFirstDocumentOfASOPSFile(t *testing.T) {
	id, key := ageKey(t)
	d := decryptor(t, map[string][]byte{"a.agekey": key})
	enc := string(encrypt(t, sopsfile.YAML, []byte(secretYAML), "^(data|stringData)$", ageMaster(t, id)))
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"
	for name, tc := range map[string]struct {
		data, want string
	}{
		"document 2":            {enc + "---\n" + aliasBomb(), "document 2 expands to more than"},
		"document 3":            {cm + "---\n" + enc + "---\n" + aliasBomb(), "document 3 expands to more than"},
		"encrypted in document": {enc + "---\n" + aliasBomb() + "x: ENC[AES256_GCM,data:AA==,iv:AA==,tag:AA==,type:str]\n", "document 2 expands to more than"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			var errFile, errStream error
			alloc := allocated(func() {
				_, errFile = d.File("apps/secret.yaml", []byte(tc.data))
				_, errStream = d.Manifests("apps/all.yaml", []byte(tc.data))
			})
			g.Expect(errFile).To(MatchError(yamlbudget.ErrTooLarge))
			g.Expect(errFile.Error()).To(ContainSubstring("decrypting apps/secret.yaml: " + tc.want))
			g.Expect(errStream).To(MatchError(yamlbudget.ErrTooLarge))
			g.Expect(errStream.Error()).To(ContainSubstring("decrypting apps/all.yaml: " + tc.want))
			g.Expect(alloc).To(BeNumerically("<", 64<<20), "bytes allocated")
		})
	}
}

// sopsfile's reader holds every stream to the budget itself.
func TestSOPSReaderChecksEveryDocument(t *testing.T) {
	g := NewWithT(t)
	id, _ := ageKey(t)
	enc := string(encrypt(t, sopsfile.YAML, []byte(secretYAML), "^(data|stringData)$", ageMaster(t, id)))
	var err error
	alloc := allocated(func() { _, err = sopsfile.Load([]byte(enc+"---\n"+aliasBomb()), sopsfile.YAML) })
	g.Expect(err).To(MatchError(yamlbudget.ErrTooLarge))
	g.Expect(err.Error()).To(ContainSubstring("the SOPS file: document 2 expands to more than"))
	g.Expect(alloc).To(BeNumerically("<", 64<<20), "bytes allocated")
}
