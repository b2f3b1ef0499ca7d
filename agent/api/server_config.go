package api

// The ConfigMap and Secret routes: create, get, list and delete, shaped as
// the API server's. There is no update: delete and create again.

import (
	"bytes"
	"fmt"
	"net/http"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	strictjson "sigs.k8s.io/json"
)

var (
	configMapsResource = schema.GroupResource{Resource: "configmaps"}
	secretsResource    = schema.GroupResource{Resource: "secrets"}
)

// decodeObject reads a create request's body strictly into obj (a v1
// object of kind, whose TypeMeta and ObjectMeta meta points at) and checks
// its kind (gr names it in errors) and namespace against the path's namespace ns, which fills an
// empty one.
func (s *Server) decodeObject(w http.ResponseWriter, r *http.Request, kind string, gr schema.GroupResource, obj any, tm *metav1.TypeMeta, om *metav1.ObjectMeta) error {
	ns := r.PathValue("ns")
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return apierrors.NewBadRequest("the request body is empty: send a v1 " + kind)
	}
	j, err := bodyJSON(r, body)
	if err != nil {
		return err
	}
	strictErrs, err := strictjson.UnmarshalStrict(j, obj)
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("decode %s: %v", kind, err))
	}
	if len(strictErrs) > 0 {
		return strictDecodingError(gr.Resource, om.Name, strictErrs)
	}
	if (tm.APIVersion != "" && tm.APIVersion != "v1") || (tm.Kind != "" && tm.Kind != kind) {
		return apierrors.NewBadRequest(fmt.Sprintf("the body is %s %s: this path takes apiVersion v1, kind %s", tm.APIVersion, tm.Kind, kind))
	}
	switch om.Namespace {
	case "":
		om.Namespace = ns
	case ns:
	default:
		return apierrors.NewBadRequest(fmt.Sprintf("the namespace of the provided object (%q) does not match the namespace sent on the request (%q)", om.Namespace, ns))
	}
	tm.APIVersion, tm.Kind = "v1", kind
	return nil
}

func (s *Server) createConfigMap(w http.ResponseWriter, r *http.Request) error {
	var cm v1.ConfigMap
	if err := s.decodeObject(w, r, "ConfigMap", configMapsResource, &cm, &cm.TypeMeta, &cm.ObjectMeta); err != nil {
		return err
	}
	created, err := s.backend.CreateConfigMap(r.Context(), &cm)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, withConfigMapType(created))
	return nil
}

func (s *Server) createSecret(w http.ResponseWriter, r *http.Request) error {
	var sec v1.Secret
	if err := s.decodeObject(w, r, "Secret", secretsResource, &sec, &sec.TypeMeta, &sec.ObjectMeta); err != nil {
		return err
	}
	created, err := s.backend.CreateSecret(r.Context(), &sec)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, withSecretType(created))
	return nil
}

// withConfigMapType returns a shallow copy with the type meta set (the
// rest is only read, encoded).
func withConfigMapType(cm *v1.ConfigMap) *v1.ConfigMap {
	out := *cm
	out.APIVersion, out.Kind = "v1", "ConfigMap"
	return &out
}

// withSecretType returns a shallow copy with the type meta set.
func withSecretType(sec *v1.Secret) *v1.Secret {
	out := *sec
	out.APIVersion, out.Kind = "v1", "Secret"
	return &out
}

func (s *Server) listConfigMaps(w http.ResponseWriter, r *http.Request) error {
	if t, ok := wantTable(r); ok {
		writeJSON(w, http.StatusOK, configMapTable(s.backend.ListConfigMaps(r.PathValue("ns")), t))
		return nil
	}
	list := v1.ConfigMapList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMapList"}, Items: []v1.ConfigMap{}}
	for _, cm := range s.backend.ListConfigMaps(r.PathValue("ns")) {
		list.Items = append(list.Items, *withConfigMapType(cm))
	}
	writeJSON(w, http.StatusOK, list)
	return nil
}

func (s *Server) listSecrets(w http.ResponseWriter, r *http.Request) error {
	if t, ok := wantTable(r); ok {
		writeJSON(w, http.StatusOK, secretTable(s.backend.ListSecrets(r.PathValue("ns")), t))
		return nil
	}
	list := v1.SecretList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "SecretList"}, Items: []v1.Secret{}}
	for _, sec := range s.backend.ListSecrets(r.PathValue("ns")) {
		list.Items = append(list.Items, *withSecretType(sec))
	}
	writeJSON(w, http.StatusOK, list)
	return nil
}

// getConfigMap finds the ConfigMap in its namespace's list: there are few.
func (s *Server) getConfigMap(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	for _, cm := range s.backend.ListConfigMaps(r.PathValue("ns")) {
		if cm.Name == name {
			if t, ok := wantTable(r); ok {
				writeJSON(w, http.StatusOK, configMapTable([]*v1.ConfigMap{cm}, t))
				return nil
			}
			writeJSON(w, http.StatusOK, withConfigMapType(cm))
			return nil
		}
	}
	return apierrors.NewNotFound(configMapsResource, name)
}

// getSecret finds the Secret in its namespace's list.
func (s *Server) getSecret(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	for _, sec := range s.backend.ListSecrets(r.PathValue("ns")) {
		if sec.Name == name {
			if t, ok := wantTable(r); ok {
				writeJSON(w, http.StatusOK, secretTable([]*v1.Secret{sec}, t))
				return nil
			}
			writeJSON(w, http.StatusOK, withSecretType(sec))
			return nil
		}
	}
	return apierrors.NewNotFound(secretsResource, name)
}

// deletedStatus is the API server's answer to the delete of an object
// without graceful deletion: a Success Status naming it.
func deletedStatus(gr schema.GroupResource, name string) metav1.Status {
	return metav1.Status{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
		Status:   metav1.StatusSuccess,
		Details:  &metav1.StatusDetails{Name: name, Kind: gr.Resource},
	}
}

func (s *Server) deleteConfigMap(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	if err := s.backend.DeleteConfigMap(r.Context(), r.PathValue("ns"), name); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, deletedStatus(configMapsResource, name))
	return nil
}

func (s *Server) deleteSecret(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	if err := s.backend.DeleteSecret(r.Context(), r.PathValue("ns"), name); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, deletedStatus(secretsResource, name))
	return nil
}
