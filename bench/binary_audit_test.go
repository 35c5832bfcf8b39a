package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/gitsync-dev/gitsync/config"
	"github.com/gitsync-dev/gitsync/internal/testutil/apicount"
)

// BenchmarkBinary's operator talks to the API server directly, as `gitsync run` does in a
// cluster, and its requests are counted from the API server's audit log: a proxy between
// the two (TLS and HTTP/2 on both sides) cost the machine about 0.3 ms of CPU per request
// that no user's operator pays, and added a hop to every latency measured. The operator
// runs as a ServiceAccount of its own (binaryServiceAccount, bound to the install's roles),
// the only user the policy records, once per request (stage RequestReceived, level
// Metadata: no bodies).
const (
	binaryNamespace      = "gitsync-system"
	binaryServiceAccount = "gitsync-binary"
	binaryAuditPolicy    = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [ResponseStarted, ResponseComplete, Panic]
rules:
- level: Metadata
  users: ["system:serviceaccount:` + binaryNamespace + `:` + binaryServiceAccount + `"]
- level: None
`
)

// auditPath is the API server's audit log (set by TestMain).
var auditPath string

// auditLog counts the binary operator's requests as the audit log lists them and, while
// recording, keeps each one.
type auditLog struct {
	counter *apicount.Counter

	mu        sync.Mutex
	offset    int64
	recording bool
	recorded  []string
}

// newAuditLog counts the requests logged from now on.
func newAuditLog(b *testing.B) *auditLog {
	b.Helper()
	a := &auditLog{counter: apicount.New()}
	if fi, err := os.Stat(auditPath); err == nil {
		a.offset = fi.Size()
	}
	return a
}

// read counts the complete lines logged since the last read.
func (a *auditLog) read() {
	a.mu.Lock()
	defer a.mu.Unlock()
	f, err := os.Open(auditPath)
	if err != nil {
		return
	}
	defer f.Close()
	if _, err := f.Seek(a.offset, io.SeekStart); err != nil {
		return
	}
	data, err := io.ReadAll(f)
	end := bytes.LastIndexByte(data, '\n')
	if err != nil || end < 0 {
		return
	}
	a.offset += int64(end + 1)
	for line := range bytes.SplitSeq(data[:end], []byte("\n")) {
		var ev struct {
			Verb       string    `json:"verb"`
			RequestURI string    `json:"requestURI"`
			UserAgent  string    `json:"userAgent"`
			Received   time.Time `json:"requestReceivedTimestamp"`
		}
		if json.Unmarshal(line, &ev) != nil {
			continue
		}
		u, err := url.ParseRequestURI(ev.RequestURI)
		if err != nil {
			continue
		}
		verb := ev.Verb
		if u.Query().Get("dryRun") != "" {
			verb = "dry-run-" + verb
		}
		a.counter.Add(verb, u.Path)
		if a.recording {
			a.recorded = append(a.recorded, fmt.Sprintf("%s %s %s %s", ev.Received.Local().Format("15:04:05.000"), verb, u.Path, ev.UserAgent))
		}
	}
}

// snapshot is the counts so far, by verb and by verb and resource.
func (a *auditLog) snapshot() (counts, detail map[string]int) {
	a.read()
	return a.counter.Snapshot(), a.counter.DetailSnapshot()
}

// since is the counts logged after snapshot's.
func (a *auditLog) since(counts, detail map[string]int) (map[string]int, map[string]int) {
	a.read()
	return a.counter.Since(counts), a.counter.DetailSince(detail)
}

// record starts keeping every request; the returned func stops and returns them.
func (a *auditLog) record() (stop func() []string) {
	a.read()
	a.mu.Lock()
	a.recording, a.recorded = true, nil
	a.mu.Unlock()
	return func() []string {
		a.read()
		a.mu.Lock()
		defer a.mu.Unlock()
		a.recording = false
		return a.recorded
	}
}

// binaryKubeconfig writes a kubeconfig that reaches the API server with a token of
// binaryServiceAccount and returns its path.
func binaryKubeconfig(b *testing.B) string {
	b.Helper()
	token, err := binaryToken()
	if err != nil {
		b.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["bench"] = &clientcmdapi.Cluster{Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData}
	kc.AuthInfos["gitsync"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["bench"] = &clientcmdapi.Context{Cluster: "bench", AuthInfo: "gitsync"}
	kc.CurrentContext = "bench"
	path := filepath.Join(b.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		b.Fatal(err)
	}
	return path
}

// binaryToken creates binaryServiceAccount beside the install's (operatorToken installs
// it), binds it to every role the install binds its own to, and requests a token for it,
// once per benchmark process.
var binaryToken = sync.OnceValues(func() (string, error) {
	if _, err := operatorToken(); err != nil {
		return "", err
	}
	ctx := context.Background()
	objs, err := config.InstallFullPrivilege()
	if err != nil {
		return "", err
	}
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: binaryServiceAccount, Namespace: binaryNamespace}}
	if err := env.Client.Create(ctx, account); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("creating %s/%s: %w", binaryNamespace, binaryServiceAccount, err)
	}
	bound := 0
	for _, o := range objs {
		if o.GetKind() != "ClusterRoleBinding" && o.GetKind() != "RoleBinding" {
			continue
		}
		subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
		if len(subjects) == 0 {
			continue
		}
		binding := o.DeepCopy()
		binding.SetName(o.GetName() + "-" + binaryServiceAccount)
		binding.SetResourceVersion("")
		_ = unstructured.SetNestedSlice(binding.Object, []any{map[string]any{
			"kind": "ServiceAccount", "name": binaryServiceAccount, "namespace": binaryNamespace,
		}}, "subjects")
		if err := env.Client.Create(ctx, binding); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("binding %s: %w", binaryServiceAccount, err)
		}
		bound++
	}
	if bound == 0 {
		return "", fmt.Errorf("the install binds no role to its ServiceAccount")
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](6 * 3600)}}
	if err := env.Client.SubResource("token").Create(ctx, account, req); err != nil {
		return "", fmt.Errorf("requesting a token for %s: %w", binaryServiceAccount, err)
	}
	return req.Status.Token, nil
})

// formatRecorded is the recorded requests, one per line, indented.
func formatRecorded(lines []string) string {
	if len(lines) == 0 {
		return "none"
	}
	return "\n    " + strings.Join(lines, "\n    ")
}
