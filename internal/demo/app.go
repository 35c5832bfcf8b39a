package demo

// appFiles is the demo app: a kustomize base (Namespace, ConfigMap, Deployment, Service)
// and an overlay that changes it.
var appFiles = map[string]string{
	"apps/demo/base/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - namespace.yaml
  - configmap.yaml
  - deployment.yaml
  - service.yaml
  - migrate-job.yaml
`,
	"apps/demo/base/namespace.yaml": `apiVersion: v1
kind: Namespace
metadata:
  name: demo-app
`,
	"apps/demo/base/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
  namespace: demo-app
  annotations:
    gitsync.dev/sync-wave: "-1"   # before the Deployment that reads it
data:
  greeting: hello from git
`,
	"apps/demo/base/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: demo-app
spec:
  replicas: 1
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
        - name: web
          image: nginx:1.27
          ports:
            - containerPort: 80
          envFrom:
            - configMapRef:
                name: web-config
`,
	"apps/demo/base/migrate-job.yaml": `# A PreSync hook: runs before anything of a new revision is applied, deleted once it succeeded.
# (kustomize needs a name; in plain YAML and charts a hook may use generateName.)
apiVersion: batch/v1
kind: Job
metadata:
  name: db-migrate
  namespace: demo-app
  annotations:
    gitsync.dev/hook: PreSync
    gitsync.dev/hook-delete-policy: HookSucceeded
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: migrate
          image: busybox:1.37
          command: ["sh", "-c", "echo migrating"]
`,
	"apps/demo/base/service.yaml": `apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: demo-app
spec:
  selector:
    app: web
  ports:
    - port: 80
      targetPort: 80
`,
	"apps/demo/overlays/dev/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ../../base
patches:
  - target:
      kind: Deployment
      name: web
    patch: |
      - op: replace
        path: /spec/replicas
        value: 2
`,
}
