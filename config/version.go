package config

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ImageRepository is where gitsync's released images are pushed.
const ImageRepository = "ghcr.io/gitsync-dev/gitsync"

// Version is the version of this build (e.g. v0.2.0), set at build time with
// -ldflags "-X github.com/gitsync-dev/gitsync/config.Version=v0.2.0" (make image does).
// Empty: the manager image is the one config/manager/deployment.yaml names, i.e. the
// latest release of hack/releases (a test keeps the two equal).
var Version = ""

// ManagerContainer is the name of the operator's container in its Deployment.
const ManagerContainer = "manager"

// Image is the manager image this build installs by default: ImageRepository:Version,
// or without a version stamped at build time, the image of config/manager.
func Image() (string, error) {
	if Version != "" {
		return ImageRepository + ":" + Version, nil
	}
	objs, err := build("/config/manager")
	if err != nil {
		return "", err
	}
	if img := managerImage(objs); img != "" {
		return img, nil
	}
	return "", fmt.Errorf("config/manager has no Deployment with a %q container", ManagerContainer)
}

// ImageTag is the tag of an image reference ("" when it has none, or a digest).
func ImageTag(image string) string {
	if strings.Contains(image, "@") {
		return ""
	}
	i := strings.LastIndex(image, ":")
	if i < 0 || strings.Contains(image[i:], "/") {
		return ""
	}
	return image[i+1:]
}

// managerImage is the image of the manager container of the Deployment in objs.
func managerImage(objs []*unstructured.Unstructured) string {
	for _, c := range managerContainers(objs) {
		if img, ok := c["image"].(string); ok {
			return img
		}
	}
	return ""
}

// setManagerImage sets the image of the manager container of every Deployment in objs.
func setManagerImage(objs []*unstructured.Unstructured, image string) {
	for _, c := range managerContainers(objs) {
		c["image"] = image
	}
}

// managerContainers are the manager containers of the Deployments in objs, as maps
// that alias the objects' own (writing one changes the object).
func managerContainers(objs []*unstructured.Unstructured) []map[string]any {
	var out []map[string]any
	for _, obj := range objs {
		if obj.GetKind() != "Deployment" {
			continue
		}
		spec, _ := obj.Object["spec"].(map[string]any)
		tmpl, _ := spec["template"].(map[string]any)
		podSpec, _ := tmpl["spec"].(map[string]any)
		containers, _ := podSpec["containers"].([]any)
		for _, c := range containers {
			if m, ok := c.(map[string]any); ok && m["name"] == ManagerContainer {
				out = append(out, m)
			}
		}
	}
	return out
}

// LatestRelease is the version on the last line of hack/releases' content (lines
// "vX.Y.Z <commit>"; # starts a comment).
func LatestRelease(releases []byte) (string, error) {
	latest := ""
	for _, line := range strings.Split(string(releases), "\n") {
		if f := strings.Fields(line); len(f) > 0 && !strings.HasPrefix(f[0], "#") {
			latest = f[0]
		}
	}
	if latest == "" {
		return "", fmt.Errorf("no release listed")
	}
	return latest, nil
}
