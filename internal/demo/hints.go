package demo

import (
	"fmt"
	"path/filepath"
	"strings"
)

// tryHints is what the demo prints once it runs: commands to try in another shell, with
// {kubeconfig}, {cli}, {ns}, {repo}, {webhook}, {token}, {log} and {config} filled in.
const tryHints = `
The demo runs until Ctrl-C. Try, in another shell:

  export KUBECONFIG={kubeconfig}
  {cli}
  gitsync get apps -A
  gitsync tree app demo -n {ns}
  gitsync history app demo -n {ns}
  gitsync verify app demo -n {ns} --key-secret {ns}/attestation-key   # the signed record of the last sync matches the cluster
  gitsync diff app hello -n {ns}                  # exit 0: the chart renders as the sync does (Capabilities, valuesFrom)
  gitsync logs app demo -n {ns} --file {log}      # the operator's lines about one Application
  kubectl get gitrepo,helmrepo,gsapp -n {ns}
  kubectl get all,configmap -n demo-app

  # a change in Git: see it with gitsync diff before it lands
  cd {repo}
  sed -i 's/hello from git/hello again/' apps/demo/base/configmap.yaml
  gitsync diff app demo -n {ns} --path apps/demo/overlays/dev    # exit 1: one field changes
  git commit -qam "new greeting"
  # the push webhook applies it at once (otherwise the 1m poll does):
  body='{"url": "file://{repo}", "ref": "refs/heads/main"}'
  curl -s -X POST http://{webhook}/hook/generic -H "X-Signature: sha256=$(printf %s "$body" | openssl dgst -sha256 -hmac {token} | sed 's/^.* //')" -d "$body"
  gitsync wait app demo -n {ns} --for synced --revision "$(git rev-parse HEAD)"   # the pushed commit, applied
  kubectl get configmap web-config -n demo-app -o yaml
  kubectl get gsapp demo -n {ns} -o jsonpath='{.status.hooks}{"\n"}'     # the PreSync hook ran again
  gitsync reconcile app demo -n {ns}                 # a sync request: no hook runs again at the same revision
  gitsync reconcile app demo -n {ns} --hooks         # ... unless it asks for them
  gitsync reconcile app demo -n {ns} --prune=false   # this sync keeps what left Git (spec.prune: true); the next prunes it

  # image automation: a new tag in the local registry became a commit (see git log) and a rollout
  gitsync get images -n {ns}
  git -C {repo} log -1 --stat --author='image automation'

  # the chart: change a value, and the objects follow
  kubectl patch gsapp hello -n {ns} --type merge -p '{"spec":{"helm":{"values":{"greeting":"hi from values"}}}}'
  kubectl get configmap hello-greeting -n {ns} -o jsonpath='{.data.greeting}{"\n"}'
  # the same chart from the HelmRepository: pin another range and see it refused, then back
  kubectl patch gsapp hello-repo -n {ns} --type merge -p '{"spec":{"helm":{"version":">=1.0.0"}}}'
  kubectl get gsapp hello-repo -n {ns}     # Ready False: no version of chart "hello" matches
  kubectl patch gsapp hello-repo -n {ns} --type merge -p '{"spec":{"helm":{"version":"~0.3"}}}'
  # two sources in one Application: the chart from the repository joined with YAML from Git
  gitsync get apps mixed -n {ns} -o wide   # SOURCE HelmRepository/charts,GitRepository/demo; REVISION lists both
  kubectl get configmap mixed-notes mixed-greeting -n {ns}

{config}
  # drift: an edit outside Git is reverted at once, and reported
  kubectl set image deployment/web web=nginx:drifted -n demo-app
  kubectl get deployment web -n demo-app -o jsonpath='{.spec.template.spec.containers[0].image}{"\n"}'
  kubectl get events -n {ns} --field-selector involvedObject.kind=Application
  kubectl patch gsapp demo -n {ns} --type merge -p '{"spec":{"selfHeal":false}}'   # report only
  kubectl set image deployment/web web=nginx:drifted -n demo-app
  kubectl get gsapp demo -n {ns} -o jsonpath='{.status.drift}{"\n"}'
  gitsync verify app demo -n {ns} --key-secret {ns}/attestation-key   # exit 1: names the edited image and its writer

(No kubelet runs here: the demo marks Deployments Available and hook Jobs Complete itself.)
`

// cliHint is the hint's line that puts the gitsync CLI on PATH: the binary running the
// demo (`make demo` built it as `make build` does, so there is nothing to rebuild).
func cliHint(binary string) string {
	if binary == "" { // the demo runs inside another program (a test)
		return "export PATH=$PWD/bin:$PATH     # after make build (from the repository's root): the gitsync CLI"
	}
	return fmt.Sprintf("export PATH=%s:$PATH     # %s: the gitsync CLI, the binary running this demo", shellQuote(filepath.Dir(binary)), binary)
}

// shellQuote quotes s for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./+=:@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
