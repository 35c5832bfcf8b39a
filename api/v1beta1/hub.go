package v1beta1

// Hub marks GitRepository as the version every other one converts through
// (sigs.k8s.io/controller-runtime/pkg/conversion).
func (*GitRepository) Hub() {}

// Hub marks HelmRepository as the version every other one converts through.
func (*HelmRepository) Hub() {}

// Hub marks Application as the version every other one converts through.
func (*Application) Hub() {}
