package api

// This file serves server-side apply (kubectl apply --server-side): a
// PATCH with Content-Type application/apply-patch+yaml whose body is the
// applied configuration, a whole object.
//
// What is modelled: the objects on this node have a single writer (the
// node's user), so the applied configuration is the desired object. An
// absent object is created (as POST: same defaults and validation); a
// present one becomes the applied object: fields the configuration omits
// are removed, which is server-side apply's result when one field manager
// owns every field. A pod whose applied labels, annotations and spec
// equal the stored pod's once defaulted is unchanged (200, as the
// client-side apply's patch that changes nothing); a changed pod goes
// through PodUpdater under the API server's update rule, as a client-side
// apply's change (labels, annotations and images in place; other spec
// changes refused). ConfigMaps and Secrets change in place, with the
// immutable rules of the patch path.
//
// What is not modelled: managedFields (never stored, always returned
// empty) and conflicts between field managers: there is one writer, so
// fieldManager is accepted and not recorded, and force (kubectl
// --force-conflicts) is accepted and ignored. A field set by another
// manager (say the last-applied annotation of an earlier client-side
// apply) is not kept apart: the applied object replaces it. dryRun is
// refused (400), not ignored.

import (
	"bytes"
	"fmt"
	"mime"
	"net/http"
	"reflect"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	strictjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/minikubelet/minikubelet/agent/manifest/decodeerr"
)

// applyPatchType is server-side apply's Content-Type.
const applyPatchType = "application/apply-patch+yaml"

// PodPreparer is a Backend that can say what a pod would be once stored
// (CreatePod's defaults and validation) without storing it: server-side
// apply compares that with the stored pod. Errors as Backend's (Invalid
// with field paths).
type PodPreparer interface {
	PreparePod(pod *v1.Pod) (*v1.Pod, error)
}

// isApply reports whether r is a server-side apply.
func isApply(r *http.Request) bool {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return mt == applyPatchType
}

// decodeApplied reads an applied configuration (YAML or JSON) strictly
// into obj, whose TypeMeta and ObjectMeta tm and om point at. As the API
// server: apiVersion and kind must be set and name the path's kind, the
// name must be the path's (an empty one takes it), the namespace too, and
// managedFields must be empty.
func (s *Server) decodeApplied(w http.ResponseWriter, r *http.Request, kind string, gr schema.GroupResource, obj any, tm *metav1.TypeMeta, om *metav1.ObjectMeta) error {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	if r.URL.Query().Has("dryRun") {
		// Refused rather than ignored: ignoring it would really write.
		return apierrors.NewBadRequest("dryRun is not supported by this node's server-side apply: drop --dry-run=server (kubectl diff and --dry-run=client need no server support)")
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return apierrors.NewBadRequest("the applied configuration is empty: send a v1 " + kind)
	}
	if n := yamlDocuments(body); n > 1 {
		return apierrors.NewBadRequest(fmt.Sprintf("the applied configuration holds %d YAML documents: apply one object per request", n))
	}
	j, err := yaml.YAMLToJSONStrict(body)
	if err != nil {
		return apierrors.NewBadRequest("decode the applied configuration: " + decodeerr.LocateYAML(err.Error(), body, 0))
	}
	strictErrs, err := strictjson.UnmarshalStrict(j, obj)
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("decode the applied %s: %s", kind, decodeerr.Problem(j, reflect.TypeOf(obj).Elem(), nil, err)))
	}
	if len(strictErrs) > 0 {
		return strictDecodingError(gr.Resource, name, strictErrs)
	}
	if tm.APIVersion != "v1" || tm.Kind != kind {
		return apierrors.NewBadRequest(fmt.Sprintf("the applied configuration is apiVersion %q, kind %q: server-side apply on this path takes apiVersion v1, kind %s (both must be set)", tm.APIVersion, tm.Kind, kind))
	}
	switch om.Name {
	case "":
		om.Name = name
	case name:
	default:
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the applied object (%q) does not match the name on the URL (%q)", om.Name, name))
	}
	switch om.Namespace {
	case "":
		om.Namespace = ns
	case ns:
	default:
		return apierrors.NewBadRequest(fmt.Sprintf("the namespace of the applied object (%q) does not match the namespace on the URL (%q)", om.Namespace, ns))
	}
	if len(om.ManagedFields) > 0 {
		return apierrors.NewBadRequest("metadata.managedFields must be empty in an applied configuration")
	}
	return nil
}

func (s *Server) applyPod(w http.ResponseWriter, r *http.Request) error {
	var pod v1.Pod
	if err := s.decodeApplied(w, r, "Pod", podsResource, &pod, &pod.TypeMeta, &pod.ObjectMeta); err != nil {
		return err
	}
	pod.Status = v1.PodStatus{} // the node's
	live, err := s.backend.GetPod(pod.Namespace, pod.Name)
	if apierrors.IsNotFound(err) {
		created, err := s.backend.CreatePod(r.Context(), &pod)
		if err != nil {
			return err
		}
		writePod(w, http.StatusCreated, created)
		return nil
	}
	if err != nil {
		return err
	}
	prep, ok := s.backend.(PodPreparer)
	if !ok {
		return apierrors.NewMethodNotSupported(podsResource, "server-side apply of an existing pod")
	}
	desired, err := prep.PreparePod(pod.DeepCopy())
	if err != nil {
		return err
	}
	// The preparation derives a UID for a new pod: this one keeps its own
	// (the applied configuration's, if it names one: the update rule
	// refuses another).
	desired.UID = pod.UID
	updated, err := s.updatePod(r.Context(), live, desired)
	if err != nil {
		return err
	}
	writePod(w, http.StatusOK, updated)
	return nil
}

func (s *Server) applyConfigMap(w http.ResponseWriter, r *http.Request) error {
	var cm v1.ConfigMap
	if err := s.decodeApplied(w, r, "ConfigMap", configMapsResource, &cm, &cm.TypeMeta, &cm.ObjectMeta); err != nil {
		return err
	}
	live := findConfig(s.backend.ListConfigMaps(cm.Namespace), cm.Name)
	if live == nil {
		created, err := s.backend.CreateConfigMap(r.Context(), &cm)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusCreated, withConfigMapType(created))
		return nil
	}
	return s.updateConfigMap(w, r, withConfigMapType(live), &cm)
}

func (s *Server) applySecret(w http.ResponseWriter, r *http.Request) error {
	var sec v1.Secret
	if err := s.decodeApplied(w, r, "Secret", secretsResource, &sec, &sec.TypeMeta, &sec.ObjectMeta); err != nil {
		return err
	}
	live := findConfig(s.backend.ListSecrets(sec.Namespace), sec.Name)
	if live == nil {
		created, err := s.backend.CreateSecret(r.Context(), &sec)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusCreated, withSecretType(created))
		return nil
	}
	live = withSecretType(live)
	if sec.Type == "" {
		sec.Type = live.Type // defaulted on create; omitting it changes nothing
	}
	// As the API server: stringData is written into data (its keys win),
	// so an applied stringData equal to the stored data is unchanged.
	for k, v := range sec.StringData {
		if sec.Data == nil {
			sec.Data = map[string][]byte{}
		}
		sec.Data[k] = []byte(v)
	}
	sec.StringData = nil
	return s.updateSecret(w, r, live, &sec)
}

// findConfig returns the ConfigMap or Secret named name of list, or nil.
func findConfig[T interface{ GetName() string }](list []T, name string) T {
	var zero T
	for _, o := range list {
		if o.GetName() == name {
			return o
		}
	}
	return zero
}
