// Package image holds the image automation controllers: ImageRepository (scan tags),
// ImagePolicy (choose the latest) and ImageUpdateAutomation (commit and push the choice).
package image
