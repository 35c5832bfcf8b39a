package decrypt

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gitsync-dev/gitsync/internal/sopsfile"
)

// BenchmarkManifests200 decrypts 200 age-encrypted Secrets, the measure of the
// cost decryption adds to a sync.
func BenchmarkManifests200(b *testing.B) {
	id, key := ageKey(b)
	d := decryptor(b, map[string][]byte{"k.agekey": key})
	encrypted := make([][]byte, 200)
	for i := range encrypted {
		doc := strings.Replace(secretYAML, "name: db", fmt.Sprintf("name: db-%d", i), 1)
		encrypted[i] = encrypt(b, sopsfile.YAML, []byte(doc), "^(data|stringData)$", ageMaster(b, id))
	}
	for b.Loop() {
		for _, e := range encrypted {
			if _, err := d.Manifests("secret.yaml", e); err != nil {
				b.Fatal(err)
			}
		}
	}
}
