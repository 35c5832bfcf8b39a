// Package manifests holds the YAML fixtures that tests of several packages share: a
// Widget CRD and a web Deployment.
package manifests

import "fmt"

// WidgetCRD is a namespaced CRD of kind Widget in group, whose spec.size is an integer.
// Tests use a group of their own, so that repeated runs meet no CRD of an earlier one.
func WidgetCRD(group string) string {
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.%[1]s
spec:
  group: %[1]s
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                size: {type: integer}
`, group)
}

// Deployment is a Deployment "web" of one replica with one container "web" running image.
func Deployment(image string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: %s
`, image)
}
