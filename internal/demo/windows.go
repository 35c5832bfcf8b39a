package demo

// previewHints are the demo's printed hints for a preview without a forge: a branch of the
// demo repository, diffed against the cluster before it merges.
const previewHints = `  # a preview without a forge: what a branch would change, before it merges
  git -C {repo} switch -q -c feature
  sed -i 's/color: blue/color: navy/' {repo}/fleet/blue/app.yaml
  git -C {repo} commit -qam "navy blue"
  git -C {repo} switch -q main
  gitsync diff source demo -n {ns} --revision feature    # exit 1: every Application of the source at the branch; fleet-blue changes

`

// windowHints are the demo's printed hints for a sync window and a selective sync: a deny
// window closes the Application demo, a new commit waits, one object of it is synced
// alone; removing the window lets the rest follow.
const windowHints = `  # a sync window: a deny window that is always active (manualSync lets a request through)
  kubectl patch gsapp demo -n {ns} --type merge -p '{"spec":{"syncWindows":[{"kind":"deny","schedule":"* * * * *","duration":"1h","manualSync":true}]}}'
  kubectl wait gsapp demo -n {ns} --for=jsonpath='{.status.syncWindow.state}'=Closed
  sed -i 's/hello again/hello, selectively/' {repo}/apps/demo/base/configmap.yaml
  sed -i 's/nginx:1.27/nginx:1.28/' {repo}/apps/demo/base/deployment.yaml
  git -C {repo} commit -qam "greeting and image"
  gitsync reconcile source demo -n {ns}         # fetched: the new revision waits for the window
  gitsync get apps -n {ns}                      # demo: OutOfSync, WINDOW Closed
  # selective sync: only the ConfigMap of the new revision (no hooks, no prune; demo stays OutOfSync)
  gitsync sync app demo -n {ns} --resource ConfigMap/demo-app/web-config
  kubectl get configmap web-config -n demo-app -o jsonpath='{.data.greeting}{"\n"}'                         # hello, selectively
  kubectl get deployment web -n demo-app -o jsonpath='{.spec.template.spec.containers[0].image}{"\n"}'     # still nginx:1.27
  kubectl get gsapp demo -n {ns} -o jsonpath='{.status.selectiveSync}{"\n"}'
  # the window removed, the rest follows
  kubectl patch gsapp demo -n {ns} --type json -p '[{"op":"remove","path":"/spec/syncWindows"}]'
  gitsync wait app demo -n {ns} --for synced --revision "$(git -C {repo} rev-parse HEAD)"

`
