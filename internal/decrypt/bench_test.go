package decrypt

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitsync-dev/gitsync/internal/sopsfile"
)

// BenchmarkObjects200 decrypts 200 age-encrypted Secrets, the measure of the
// cost decryption adds to a sync.
func BenchmarkObjects200(b *testing.B) {
	id, key := ageKey(b)
	d := decryptor(b, map[string][]byte{"k.agekey": key})
	encrypted := make([][]byte, 200)
	for i := range encrypted {
		doc := strings.Replace(secretYAML, "name: db", fmt.Sprintf("name: db-%d", i), 1)
		encrypted[i] = encrypt(b, sopsfile.YAML, []byte(doc), "^(data|stringData)$", ageMaster(b, id))
	}
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		objs := make([]*unstructured.Unstructured, len(encrypted))
		for i, e := range encrypted {
			objs[i] = object(b, e)
		}
		b.StartTimer()
		if err := d.Objects(objs, nil); err != nil {
			b.Fatal(err)
		}
	}
}
