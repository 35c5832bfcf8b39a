package demo

// chartFiles is the demo's own Helm chart (apps/hello-chart), rendered in process by
// the "hello" Application with inline values.
var chartFiles = map[string]string{
	"apps/hello-chart/Chart.yaml": `apiVersion: v2
name: hello
description: gitsync's demo chart
version: 0.3.0
appVersion: "1.0"
`,
	"apps/hello-chart/values.yaml": `greeting: hello from the chart
replicaCount: 1
image: nginx:1.27
`,
	"apps/hello-chart/templates/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-greeting
data:
  greeting: {{ .Values.greeting | quote }}
  release: {{ .Release.Name }}
  kubernetes: {{ .Capabilities.KubeVersion.Version | quote }}
`,
	"apps/hello-chart/templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicaCount }}
  selector:
    matchLabels: {app: {{ .Release.Name }}}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}}
    spec:
      containers:
        - name: hello
          image: {{ .Values.image }}
`,
	"apps/hello-chart/templates/NOTES.txt": `{{ .Release.Name }} is deployed.
`,
}
