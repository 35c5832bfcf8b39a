package health

import (
	"github.com/fluxcd/cli-utils/pkg/kstatus/polling"
	"github.com/fluxcd/cli-utils/pkg/kstatus/polling/clusterreader"
	"github.com/fluxcd/cli-utils/pkg/kstatus/polling/engine"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StatusPoller is the kstatus poller that fluxcd/pkg/ssa waits with between an apply's
// stages (CRDs and Namespaces before what they define). Its direct cluster reader GETs
// each object; the default caching one LISTs every kind of the set (all CRDs, for
// instance) on each poll.
func StatusPoller(reader client.Reader, mapper meta.RESTMapper) *polling.StatusPoller {
	return polling.NewStatusPoller(reader, mapper, polling.Options{
		ClusterReaderFactory: engine.ClusterReaderFactoryFunc(clusterreader.NewDirectClusterReader),
	})
}
