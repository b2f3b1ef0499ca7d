package api

// This file serves PATCH on ConfigMaps and Secrets (kubectl apply of a
// changed one, kubectl patch): they change in place, as on the API server.

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"reflect"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	strictjson "sigs.k8s.io/json"

	"github.com/minikubelet/minikubelet/agent/manifest/decodeerr"
)

// ConfigUpdater is a Backend that can change a ConfigMap or Secret
// submitted through the API, in place. Errors as Backend's.
type ConfigUpdater interface {
	UpdateConfigMap(ctx context.Context, cm *v1.ConfigMap) (*v1.ConfigMap, error)
	UpdateSecret(ctx context.Context, secret *v1.Secret) (*v1.Secret, error)
}

// applyPatch applies the request's patch (strategic merge, JSON merge or
// JSON patch, by Content-Type) to live and decodes the result strictly
// into out (a pointer to live's type).
func (s *Server) applyPatch(w http.ResponseWriter, r *http.Request, gr schema.GroupResource, name string, live, out any) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	liveJSON, err := json.Marshal(live)
	if err != nil {
		return fmt.Errorf("encode %s: %w", gr.Resource, err)
	}
	j, err := patchJSON(mt, body, liveJSON, gr.Resource)
	if err != nil {
		return err
	}
	return decodePatched(j, gr, name, out)
}

// decodePatched decodes a patched object strictly into out.
func decodePatched(j []byte, gr schema.GroupResource, name string, out any) error {
	strictErrs, err := strictjson.UnmarshalStrict(j, out)
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("decode patched %s: %s", gr.Resource, decodeerr.Problem(j, reflect.TypeOf(out).Elem(), nil, err)))
	}
	if len(strictErrs) > 0 {
		return strictDecodingError(gr.Resource, name, strictErrs)
	}
	return nil
}

// immutableMeta refuses a patch that renames or moves the object.
func immutableMeta(kind, name, newName, ns, newNS string) error {
	var errs field.ErrorList
	if newName != name {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), newName, "field is immutable"))
	}
	if newNS != ns {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "namespace"), newNS, "field is immutable"))
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(schema.GroupKind{Kind: kind}, name, errs)
	}
	return nil
}

// metaChanged reports whether labels or annotations differ (nil and empty
// are the same).
func metaChanged(a, b map[string]string) bool {
	return (len(a) > 0 || len(b) > 0) && !equality.Semantic.DeepEqual(a, b)
}

func (s *Server) patchConfigMap(w http.ResponseWriter, r *http.Request) error {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	if isApply(r) {
		return s.applyConfigMap(w, r) // apply.go
	}
	var live *v1.ConfigMap
	for _, cm := range s.backend.ListConfigMaps(ns) {
		if cm.Name == name {
			live = withConfigMapType(cm)
		}
	}
	if live == nil {
		return apierrors.NewNotFound(configMapsResource, name)
	}
	var cm v1.ConfigMap
	if err := s.applyPatch(w, r, configMapsResource, name, live, &cm); err != nil {
		return err
	}
	if err := immutableMeta("ConfigMap", name, cm.Name, ns, cm.Namespace); err != nil {
		return err
	}
	return s.updateConfigMap(w, r, live, &cm)
}

// updateConfigMap makes cm (a patched or applied ConfigMap of live's
// namespace/name) the stored one: unchanged answers live, an immutable
// one refuses a data change.
func (s *Server) updateConfigMap(w http.ResponseWriter, r *http.Request, live, cm *v1.ConfigMap) error {
	name := live.Name
	dataChanged := !equality.Semantic.DeepEqual(live.Data, cm.Data) && (len(live.Data) > 0 || len(cm.Data) > 0) ||
		!equality.Semantic.DeepEqual(live.BinaryData, cm.BinaryData) && (len(live.BinaryData) > 0 || len(cm.BinaryData) > 0)
	immutableChanged := !equality.Semantic.DeepEqual(live.Immutable, cm.Immutable)
	if !dataChanged && !immutableChanged && !metaChanged(live.Labels, cm.Labels) && !metaChanged(live.Annotations, cm.Annotations) {
		writeJSON(w, http.StatusOK, live)
		return nil
	}
	if live.Immutable != nil && *live.Immutable {
		// As the API server: once immutable, only the metadata changes.
		var errs field.ErrorList
		if dataChanged {
			errs = append(errs, field.Forbidden(field.NewPath("data"), "field is immutable when `immutable` is set"))
		}
		if immutableChanged {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), "field is immutable when `immutable` is set"))
		}
		if len(errs) > 0 {
			return apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, name, errs)
		}
	}
	u, ok := s.backend.(ConfigUpdater)
	if !ok {
		return apierrors.NewMethodNotSupported(configMapsResource, "patch")
	}
	updated, err := u.UpdateConfigMap(r.Context(), cm)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, withConfigMapType(updated))
	return nil
}

func (s *Server) patchSecret(w http.ResponseWriter, r *http.Request) error {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	if isApply(r) {
		return s.applySecret(w, r) // apply.go
	}
	var live *v1.Secret
	for _, sec := range s.backend.ListSecrets(ns) {
		if sec.Name == name {
			live = withSecretType(sec)
		}
	}
	if live == nil {
		return apierrors.NewNotFound(secretsResource, name)
	}
	var sec v1.Secret
	if err := s.applyPatch(w, r, secretsResource, name, live, &sec); err != nil {
		return err
	}
	if err := immutableMeta("Secret", name, sec.Name, ns, sec.Namespace); err != nil {
		return err
	}
	return s.updateSecret(w, r, live, &sec)
}

// updateSecret is updateConfigMap for a Secret; its type is immutable.
func (s *Server) updateSecret(w http.ResponseWriter, r *http.Request, live, sec *v1.Secret) error {
	name := live.Name
	var errs field.ErrorList
	if sec.Type != live.Type {
		errs = append(errs, field.Invalid(field.NewPath("type"), sec.Type, "field is immutable"))
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, name, errs)
	}
	dataChanged := len(sec.StringData) > 0 || !equality.Semantic.DeepEqual(live.Data, sec.Data) && (len(live.Data) > 0 || len(sec.Data) > 0)
	immutableChanged := !equality.Semantic.DeepEqual(live.Immutable, sec.Immutable)
	if !dataChanged && !immutableChanged && !metaChanged(live.Labels, sec.Labels) && !metaChanged(live.Annotations, sec.Annotations) {
		writeJSON(w, http.StatusOK, live)
		return nil
	}
	if live.Immutable != nil && *live.Immutable {
		if dataChanged {
			errs = append(errs, field.Forbidden(field.NewPath("data"), "field is immutable when `immutable` is set"))
		}
		if immutableChanged {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), "field is immutable when `immutable` is set"))
		}
		if len(errs) > 0 {
			return apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, name, errs)
		}
	}
	u, ok := s.backend.(ConfigUpdater)
	if !ok {
		return apierrors.NewMethodNotSupported(secretsResource, "patch")
	}
	updated, err := u.UpdateSecret(r.Context(), sec)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, withSecretType(updated))
	return nil
}
