package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/gitsync-dev/gitsync/internal/cli"
)

// A line `gitsync run` logs carries its time with milliseconds (2026-11-29T03:11:51.042Z),
// which times a sync from the operator's own log; --zap-time-encoding still chooses
// another encoding.
func TestRunLogTimesHaveMilliseconds(t *testing.T) {
	for _, tc := range []struct {
		flags []string
		want  *regexp.Regexp
	}{
		{nil, regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(Z|[+-]\d\d:\d\d)$`)},
		{[]string{"--zap-time-encoding=epoch"}, regexp.MustCompile(`^\d+\.\d+$`)},
	} {
		t.Run(strings.Join(append([]string{"run"}, tc.flags...), " "), func(t *testing.T) {
			g := NewWithT(t)
			var stderr bytes.Buffer
			// What newRoot does for `gitsync run`: its log flags, parsed, make the
			// operator's logger (ctrl.SetLogger takes only the first logger of a process).
			opts, logFlags := newLogFlags(cli.Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &stderr})
			run := newRunCommand()
			run.Flags().AddGoFlagSet(logFlags)
			g.Expect(run.ParseFlags(tc.flags)).To(Succeed())
			zap.New(zap.UseFlagOptions(opts)).WithName("setup").Info("starting gitsync")

			var line map[string]any
			dec := json.NewDecoder(bytes.NewReader(stderr.Bytes()))
			dec.UseNumber() // an epoch time as written, not as a float64 prints it
			g.Expect(dec.Decode(&line)).To(Succeed(), stderr.String())
			g.Expect(line).To(HaveKeyWithValue("msg", "starting gitsync"))
			ts := fmt.Sprint(line["ts"])
			g.Expect(ts).To(MatchRegexp(tc.want.String()), stderr.String())
		})
	}
}
