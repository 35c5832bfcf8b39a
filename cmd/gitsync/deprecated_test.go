package main

import (
	"bytes"
	"testing"

	. "github.com/onsi/gomega"
)

// The conversion webhook's flags of earlier releases (scripts, manifests and the OLM
// bundle pass them) are still accepted, have no effect, and say so on stderr.
func TestConversionFlagsAreDeprecatedNoOps(t *testing.T) {
	g := NewWithT(t)
	o := &runOptions{}
	cmd := newRunCommandWith(o)
	// cobra prints flag warnings with Print: to stderr unless an output is set, as here.
	var stderr bytes.Buffer
	cmd.SetOut(&stderr)
	g.Expect(cmd.ParseFlags([]string{"--conversion-port=9443", "--conversion-cert-dir=/tmp/k8s-webhook-server/serving-certs"})).To(Succeed())
	g.Expect(stderr.String()).To(ContainSubstring("Flag --conversion-port has been deprecated, it has no effect"))
	g.Expect(stderr.String()).To(ContainSubstring("Flag --conversion-cert-dir has been deprecated, it has no effect"))
	g.Expect(cmd.Flags().Lookup("conversion-port").Hidden).To(BeTrue(), "left out of --help")
}
