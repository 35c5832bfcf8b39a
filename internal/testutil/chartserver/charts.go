package chartserver

// ConfigMapChart is the files of a small chart: one ConfigMap, <release>-settings, whose
// data hold the value `greeting` (default hello) and the chart's version.
func ConfigMapChart(name, version string) map[string]string {
	return map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: " + name + "\nversion: " + version + "\n",
		"values.yaml": "greeting: hello\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-settings\n" +
			"data:\n  greeting: {{ .Values.greeting | quote }}\n  chart: {{ .Chart.Version | quote }}\n",
	}
}
