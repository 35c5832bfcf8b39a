package chart

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitsync-dev/gitsync/internal/helm"
	rendering "github.com/gitsync-dev/gitsync/internal/render"
)

// networkPolicy returns the chart's NetworkPolicy from objs.
func networkPolicy(t *testing.T, objs []*unstructured.Unstructured) *networkingv1.NetworkPolicy {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == "NetworkPolicy" {
			np := &networkingv1.NetworkPolicy{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, np); err != nil {
				t.Fatal(err)
			}
			return np
		}
	}
	t.Fatal("the chart renders no NetworkPolicy")
	return nil
}

// egressPorts maps each egress rule's destinations ("*" for any address) to its ports.
func egressPorts(np *networkingv1.NetworkPolicy) map[string][]int32 {
	out := map[string][]int32{}
	for _, rule := range np.Spec.Egress {
		dests := []string{"*"}
		if len(rule.To) > 0 {
			dests = nil
			for _, peer := range rule.To {
				switch {
				case peer.IPBlock != nil:
					dests = append(dests, peer.IPBlock.CIDR)
				default:
					dests = append(dests, "peer")
				}
			}
		}
		for _, d := range dests {
			for _, p := range rule.Ports {
				out[d] = append(out[d], p.Port.IntVal)
			}
		}
	}
	return out
}

// The chart's NetworkPolicy lets the operator reach DNS, the API server and only the Git
// and chart hosts the values list: never every address on Git's ports (issue 34: the
// default allowed 0.0.0.0/0 and ::/0 on 443, 6443, 22, 80 and 9418).
func TestNetworkPolicyEgressIsTheAPIServerAndDNS(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)

	// Installed on a cluster: the API server's own addresses, found by lookup.
	slice := &discoveryv1.EndpointSlice{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "kubernetes"}, slice)).To(Succeed())
	g.Expect(slice.Endpoints).NotTo(BeEmpty())
	c, err := loader.Load(chartDir)
	g.Expect(err).NotTo(HaveOccurred())
	provider := (&rendering.LookupClients{}).Provider(env.Config, env.Client.RESTMapper(), "")
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	caps, err := helm.ClusterCapabilities(dc)
	g.Expect(err).NotTo(HaveOccurred())
	out, err := helm.Render(context.Background(), c, helm.Options{ReleaseName: "gitsync", Namespace: ns,
		Values: []map[string]any{nil}, Capabilities: caps, Lookup: provider})
	g.Expect(err).NotTo(HaveOccurred())
	var objs []*unstructured.Unstructured
	for _, m := range out.Templates {
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(m.Data), 4096)
		for {
			o := &unstructured.Unstructured{}
			if err := dec.Decode(&o.Object); errors.Is(err, io.EOF) {
				break
			}
			g.Expect(err).NotTo(HaveOccurred())
			if len(o.Object) > 0 {
				objs = append(objs, o)
			}
		}
	}
	np := networkPolicy(t, objs)
	apiPort := *slice.Ports[0].Port
	want := map[string][]int32{"*": {53, 53}}
	for _, a := range slice.Endpoints[0].Addresses {
		want[a+"/32"] = []int32{apiPort}
	}
	g.Expect(egressPorts(np)).To(Equal(want))

	// Without a cluster to look at (helm template): the API server's ports only.
	g.Expect(egressPorts(networkPolicy(t, mustRender(t, ns, nil)))).To(Equal(map[string][]int32{"*": {53, 53, 443, 6443}}))

	// The API server's CIDRs given, and the hosts the user lists.
	np = networkPolicy(t, mustRender(t, ns, map[string]any{"networkPolicy": map[string]any{"egress": map[string]any{
		"apiServer": map[string]any{"cidrs": []any{"10.0.0.1/32"}, "ports": []any{6443}},
		"to":        []any{map[string]any{"ipBlock": map[string]any{"cidr": "140.82.112.0/20"}}},
	}}}))
	g.Expect(egressPorts(np)).To(Equal(map[string][]int32{"*": {53, 53}, "10.0.0.1/32": {6443}, "140.82.112.0/20": {443, 22}}))
	for _, rule := range np.Spec.Egress {
		for _, peer := range rule.To {
			if peer.IPBlock != nil {
				g.Expect(peer.IPBlock.CIDR).NotTo(BeElementOf("0.0.0.0/0", "::/0"))
			}
		}
	}
}
