package upgrade

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
)

// operatorAgent starts the user agent of both operators' requests (client-go's default:
// the binary's name); the test's own requests say upgrade.test. (The user does not tell
// them apart: localcluster's kubeconfig and the test's client are both "admin".)
const operatorAgent = "gitsync"

// auditEvent is what the test reads of an API server audit event (audit.k8s.io/v1).
type auditEvent struct {
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	UserAgent  string `json:"userAgent"`
	ObjectRef  *struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		APIGroup    string `json:"apiGroup"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

func (e auditEvent) dryRun() bool {
	u, err := url.Parse(e.RequestURI)
	return err == nil && u.Query().Has("dryRun")
}

func (e auditEvent) String() string {
	o := e.ObjectRef
	resource := o.Resource
	if o.APIGroup != "" {
		resource += "." + o.APIGroup
	}
	s := fmt.Sprintf("%s %s %s/%s", e.Verb, resource, o.Namespace, o.Name)
	if o.Subresource != "" {
		s += "/" + o.Subresource
	}
	if e.ResponseStatus != nil {
		s += fmt.Sprintf(" (%d)", e.ResponseStatus.Code)
	}
	return s
}

// auditOffset is the audit log's size now: the start of a measurement.
func auditOffset(t *testing.T) int64 {
	t.Helper()
	fi, err := os.Stat(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// operatorWrites reads the audit log from offset and returns the operators' requests
// that may write (the policy records no others).
func operatorWrites(t *testing.T, offset int64) []auditEvent {
	t.Helper()
	f, err := os.Open(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, 0); err != nil {
		t.Fatal(err)
	}
	var out []auditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("reading the audit log: %v", err)
		}
		if strings.HasPrefix(e.UserAgent, operatorAgent) && e.ObjectRef != nil {
			out = append(out, e)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// takeover sorts the operators' write requests to namespace ns: writes, prunes and
// hook runs touch managed objects (or create hooks); the rest is what an operator may
// write without disturbing them (its own kinds' status, events, dry-runs).
type takeover struct {
	writes, prunes, hookRuns             []string
	dryRuns, ownKinds, events, elsewhere int
}

func classify(events []auditEvent, ns string) takeover {
	var c takeover
	for _, e := range events {
		o := e.ObjectRef
		switch {
		case o.Namespace != ns:
			c.elsewhere++ // leader election, other namespaces' objects
		case e.dryRun():
			c.dryRuns++
		case o.APIGroup == "gitsync.dev":
			c.ownKinds++
		case o.Resource == "events":
			c.events++
		case e.Verb == "delete" || e.Verb == "deletecollection":
			c.prunes = append(c.prunes, e.String())
		case e.Verb == "create" && o.Resource == "jobs":
			c.hookRuns = append(c.hookRuns, e.String())
		default:
			c.writes = append(c.writes, e.String())
		}
	}
	return c
}

func (c takeover) String() string {
	list := func(s []string) string {
		if len(s) == 0 {
			return ""
		}
		s = slices.Clone(s)
		slices.Sort(s)
		if len(s) > 12 {
			s = append(s[:12], fmt.Sprintf("… %d more", len(s)-12))
		}
		return " [" + strings.Join(s, "; ") + "]"
	}
	return fmt.Sprintf("writes to managed objects: %d%s, prunes: %d%s, hook runs: %d%s "+
		"(not counted: %d dry-run requests, %d writes of gitsync's own kinds, %d events, %d requests outside the namespace)",
		len(c.writes), list(c.writes), len(c.prunes), list(c.prunes), len(c.hookRuns), list(c.hookRuns),
		c.dryRuns, c.ownKinds, c.events, c.elsewhere)
}
