package api

// This file reads request bodies in Kubernetes' protobuf encoding, which
// client-go's typed clientset sends for built-in kinds (Content-Type
// application/vnd.kubernetes.protobuf): a pod, ConfigMap or Secret to
// create, DeleteOptions. Responses stay JSON, which such clients also
// accept. The body is converted to JSON and then takes the JSON path
// (strict decoding, the same errors).

import (
	"bytes"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// protobufMediaType is Kubernetes' protobuf encoding.
const protobufMediaType = "application/vnd.kubernetes.protobuf"

// protobufMagic starts every protobuf-encoded object ("k8s\0"), before its
// runtime.Unknown envelope.
var protobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

// protobufToJSON converts a protobuf-encoded v1 Pod, ConfigMap, Secret or
// DeleteOptions to JSON with its apiVersion and kind.
func protobufToJSON(body []byte) ([]byte, error) {
	raw, ok := bytes.CutPrefix(body, protobufMagic)
	if !ok {
		return nil, apierrors.NewBadRequest("the protobuf body does not start with the k8s\\x00 prefix")
	}
	var unk runtime.Unknown
	if err := unk.Unmarshal(raw); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("decode the protobuf envelope: %v", err))
	}
	if unk.ContentEncoding != "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("protobuf content encoding %q is not supported", unk.ContentEncoding))
	}
	var obj interface {
		Unmarshal([]byte) error
	}
	switch gvk := unk.GroupVersionKind(); {
	case gvk.Group == "" && gvk.Version == "v1" && gvk.Kind == "Pod":
		obj = &v1.Pod{}
	case gvk.Group == "" && gvk.Version == "v1" && gvk.Kind == "ConfigMap":
		obj = &v1.ConfigMap{}
	case gvk.Group == "" && gvk.Version == "v1" && gvk.Kind == "Secret":
		obj = &v1.Secret{}
	case gvk.Group == "" && gvk.Version == "v1" && gvk.Kind == "DeleteOptions", gvk.Group == "meta.k8s.io" && gvk.Kind == "DeleteOptions":
		obj = &metav1.DeleteOptions{}
	default:
		return nil, unsupportedMediaType(fmt.Sprintf("a protobuf %s is not accepted here: send it as application/json", gvk))
	}
	if err := obj.Unmarshal(unk.Raw); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("decode the protobuf %s: %v", unk.Kind, err))
	}
	if o, ok := obj.(runtime.Object); ok {
		o.GetObjectKind().SetGroupVersionKind(unk.GroupVersionKind())
	}
	return json.Marshal(obj)
}
