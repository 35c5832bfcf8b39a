package install

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// dropConversionWebhook turns a live CRD that converts through a webhook over to strategy
// None when obj (the CRD to apply) has no webhook. Builds of gitsync before its versions
// were served with strategy None had the operator put the webhook's caBundle into the
// CRDs as a field manager of its own; a server-side apply of the new CRD leaves that
// manager's webhook fields in place, and the API server refuses a webhook without
// strategy Webhook. A merge patch, as whoever owns the fields, clears them.
func dropConversionWebhook(ctx context.Context, c client.Client, obj, live *unstructured.Unstructured) error {
	if obj.GetKind() != "CustomResourceDefinition" {
		return nil
	}
	liveStrategy, _, _ := unstructured.NestedString(live.Object, "spec", "conversion", "strategy")
	wantStrategy, _, _ := unstructured.NestedString(obj.Object, "spec", "conversion", "strategy")
	if liveStrategy != "Webhook" || wantStrategy == "Webhook" {
		return nil
	}
	patch := []byte(`{"spec":{"conversion":{"strategy":"None","webhook":null}}}`)
	if err := c.Patch(ctx, live, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(FieldManager)); err != nil {
		return fmt.Errorf("dropping the conversion webhook of %s: %w", Subject(obj), err)
	}
	return nil
}
