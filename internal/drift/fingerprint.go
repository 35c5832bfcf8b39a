package drift

import (
	"crypto/sha256"
	"fmt"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// ChangedByOthers tells whether an update was made by someone else than gitsync: it
// compares the managedFields entries of the two versions, leaving out gitsync's own
// entry and every status-subresource entry (status is never drift). An update that only
// gitsync's apply or a status writer made changes nothing there, and costs no request.
func ChangedByOthers(oldObj, newObj metav1.Object) bool {
	return Fingerprint(oldObj) != Fingerprint(newObj)
}

// Fingerprint summarises the managedFields entries of other writers than gitsync (status
// excluded), and the owner labels; two versions with the same fingerprint differ only by
// gitsync's writes or by status. It is the first 128 bits of a SHA-256 (kept per object:
// no string to allocate).
func Fingerprint(obj metav1.Object) [16]byte {
	h := sha256.New()
	labels := obj.GetLabels()
	fmt.Fprintf(h, "%s\x00%s\x00", labels[gitsyncv1.ApplicationLabel], labels[gitsyncv1.ApplicationNamespaceLabel])
	managed := obj.GetManagedFields()
	entries := make([]string, 0, len(managed))
	for _, e := range managed {
		if e.Manager == gitsyncv1.FieldManager || e.Subresource == "status" {
			continue
		}
		var when string
		if e.Time != nil {
			when = e.Time.UTC().Format(time.RFC3339)
		}
		var fields string
		if e.FieldsV1 != nil {
			fields = string(e.FieldsV1.Raw)
		}
		entries = append(entries, e.Manager+"\x00"+string(e.Operation)+"\x00"+e.Subresource+"\x00"+when+"\x00"+fields)
	}
	sort.Strings(entries)
	for _, e := range entries {
		fmt.Fprintf(h, "%s\x01", e)
	}
	return [16]byte(h.Sum(nil))
}
