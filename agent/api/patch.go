package api

// This file serves PATCH on a pod: what kubectl apply sends (client-side
// apply: a strategic merge patch carrying the last-applied annotation) and
// kubectl patch --type merge.
//
// Pods on this node are immutable. A patch that changes nothing answers
// the pod as it is (kubectl apply: "unchanged"). One that changes the pod
// goes to the backend's UpdatePod when it has one (PodUpdater): the daemon
// replaces the pod (stops it, starts the changed one under a new UID), as
// when a manifest file changes, and the response carries a Warning header
// saying so, which kubectl prints. A backend without it refuses the change
// with a 422 naming the changed fields.
//
// The strategic merge here is the subset a pod's patches use (merge keys of
// the pod's lists, $patch: delete/replace, $setElementOrder,
// $deleteFromPrimitiveList, $retainKeys), written out because
// k8s.io/apimachinery's strategicpatch links kube-openapi's schemas and the
// gnostic models into the binary (TestBinaryLinksNoFullClientset).

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"reflect"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	strictjson "sigs.k8s.io/json"

	"github.com/minikubelet/minikubelet/agent/manifest/decodeerr"
)

// PodUpdater is a Backend that can change a pod submitted through the API:
// metadata (labels, annotations) in place, a changed spec by replacing the
// pod. Errors as Backend's.
type PodUpdater interface {
	UpdatePod(ctx context.Context, pod *v1.Pod) (*v1.Pod, error)
}

// mergeKeys are the merge keys of the lists of a pod (patchMergeKey in
// k8s.io/api): a strategic merge patch merges their items by that key;
// other lists are replaced.
var mergeKeys = map[string]string{
	"containers":                "name",
	"initContainers":            "name",
	"ephemeralContainers":       "name",
	"volumes":                   "name",
	"imagePullSecrets":          "name",
	"resourceClaims":            "name",
	"env":                       "name",
	"ports":                     "containerPort",
	"volumeMounts":              "mountPath",
	"volumeDevices":             "devicePath",
	"hostAliases":               "ip",
	"topologySpreadConstraints": "topologyKey",
	"ownerReferences":           "uid",
	"conditions":                "type",
	"containerStatuses":         "name",
	"initContainerStatuses":     "name",
}

// strategicMerge applies a strategic merge patch to orig (both decoded
// JSON objects) and returns the result; orig is modified.
func strategicMerge(orig, patch map[string]any) (map[string]any, error) {
	if orig == nil {
		orig = map[string]any{}
	}
	if p, ok := patch["$patch"]; ok {
		switch p {
		case "replace":
			out := map[string]any{}
			for k, v := range patch {
				if k != "$patch" {
					out[k] = v
				}
			}
			return out, nil
		case "delete":
			return nil, nil
		default:
			return nil, fmt.Errorf("unknown $patch directive %v", p)
		}
	}
	var retain []any
	for k, pv := range patch {
		switch {
		case strings.HasPrefix(k, "$setElementOrder/"):
			continue // the order of merged lists: kept as merged
		case strings.HasPrefix(k, "$deleteFromPrimitiveList/"):
			name := strings.TrimPrefix(k, "$deleteFromPrimitiveList/")
			drop, _ := pv.([]any)
			if ol, ok := orig[name].([]any); ok {
				orig[name] = slices.DeleteFunc(slices.Clone(ol), func(v any) bool {
					return slices.ContainsFunc(drop, func(d any) bool { return reflect.DeepEqual(d, v) })
				})
			}
			continue
		case k == "$retainKeys":
			retain, _ = pv.([]any)
			continue
		}
		if pv == nil {
			delete(orig, k)
			continue
		}
		switch p := pv.(type) {
		case map[string]any:
			om, _ := orig[k].(map[string]any)
			m, err := strategicMerge(om, p)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			if m == nil {
				delete(orig, k)
			} else {
				orig[k] = m
			}
		case []any:
			ol, isList := orig[k].([]any)
			key := mergeKeys[k]
			if key == "" || !isList {
				l, err := stripDirectives(p, key)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", k, err)
				}
				orig[k] = l
				continue
			}
			l, err := mergeList(ol, p, key)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			orig[k] = l
		default:
			orig[k] = pv
		}
	}
	if retain != nil {
		for k := range orig {
			if !slices.Contains(retain, any(k)) {
				delete(orig, k)
			}
		}
	}
	return orig, nil
}

// stripDirectives returns a list that replaces another: its items without
// delete directives.
func stripDirectives(l []any, key string) ([]any, error) {
	out := make([]any, 0, len(l))
	for _, v := range l {
		m, ok := v.(map[string]any)
		if !ok {
			out = append(out, v)
			continue
		}
		if m["$patch"] == "delete" {
			continue
		}
		merged, err := strategicMerge(map[string]any{}, m)
		if err != nil {
			return nil, err
		}
		out = append(out, merged)
	}
	return out, nil
}

// mergeList merges the patch's items into orig's by the merge key.
func mergeList(orig, patch []any, key string) ([]any, error) {
	out := slices.Clone(orig)
	find := func(kv any) int {
		return slices.IndexFunc(out, func(o any) bool {
			om, ok := o.(map[string]any)
			return ok && reflect.DeepEqual(om[key], kv)
		})
	}
	for _, pv := range patch {
		pm, ok := pv.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("a list merged by %q holds a %T, not an object", key, pv)
		}
		kv, ok := pm[key]
		if !ok {
			return nil, fmt.Errorf("an item lacks the merge key %q", key)
		}
		i := find(kv)
		if pm["$patch"] == "delete" {
			if i >= 0 {
				out = slices.Delete(out, i, i+1)
			}
			continue
		}
		var base map[string]any
		if i >= 0 {
			base, _ = out[i].(map[string]any)
		}
		m, err := strategicMerge(base, pm)
		if err != nil {
			return nil, err
		}
		if i >= 0 {
			out[i] = m
		} else {
			out = append(out, m)
		}
	}
	return out, nil
}

// mergePatch applies an RFC 7386 JSON merge patch.
func mergePatch(orig any, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	o, ok := orig.(map[string]any)
	if !ok {
		o = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(o, k)
			continue
		}
		o[k] = mergePatch(o[k], v)
	}
	return o
}

func (s *Server) patchPod(w http.ResponseWriter, r *http.Request) error {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt == applyPatchType {
		return s.applyPod(w, r) // apply.go
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var patch any
	if err := json.Unmarshal(body, &patch); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("decode patch: %v", err))
	}
	live, err := s.backend.GetPod(ns, name)
	if err != nil {
		return err
	}
	liveJSON, err := json.Marshal(live)
	if err != nil {
		return fmt.Errorf("encode pod: %w", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(liveJSON, &doc); err != nil {
		return fmt.Errorf("decode pod: %w", err)
	}
	var patched any
	switch mt {
	case "application/strategic-merge-patch+json":
		pm, ok := patch.(map[string]any)
		if !ok {
			return apierrors.NewBadRequest("a strategic merge patch is a JSON object")
		}
		m, err := strategicMerge(doc, pm)
		if err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("apply the strategic merge patch: %v", err))
		}
		patched = m
	case "application/merge-patch+json":
		patched = mergePatch(doc, patch)
	default:
		return unsupportedMediaType(fmt.Sprintf("PATCH on pods takes application/strategic-merge-patch+json (kubectl apply, kubectl patch) or application/merge-patch+json (kubectl patch --type merge) or application/apply-patch+yaml (kubectl apply --server-side), not %q: JSON patches are not supported", mt))
	}
	j, err := json.Marshal(patched)
	if err != nil {
		return fmt.Errorf("encode patched pod: %w", err)
	}
	var pod v1.Pod
	strictErrs, err := strictjson.UnmarshalStrict(j, &pod)
	if err != nil {
		return apierrors.NewBadRequest("decode patched pod: " + decodeerr.Problem(j, reflect.TypeFor[v1.Pod](), nil, err))
	}
	if len(strictErrs) > 0 {
		return strictDecodingError(podsResource.Resource, name, strictErrs)
	}
	var errs field.ErrorList
	if pod.Name != live.Name {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), pod.Name, "field is immutable"))
	}
	if pod.Namespace != live.Namespace {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "namespace"), pod.Namespace, "field is immutable"))
	}
	if pod.UID != live.UID {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "uid"), pod.UID, "field is immutable"))
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, name, errs)
	}
	changed := podChanges(live, &pod)
	if len(changed) == 0 {
		writePod(w, http.StatusOK, live)
		return nil
	}
	u, ok := s.backend.(PodUpdater)
	if !ok {
		for _, f := range changed {
			errs = append(errs, field.Forbidden(f, "this node cannot change a pod yet: delete it and create it again (kubectl replace --force -f FILE)"))
		}
		return apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, name, errs)
	}
	pod.Status = v1.PodStatus{}
	updated, err := u.UpdatePod(r.Context(), &pod)
	if err != nil {
		return err
	}
	replacedWarning(w, live, updated, changed)
	writePod(w, http.StatusOK, updated)
	return nil
}

// replacedWarning adds the Warning header kubectl prints ("Warning: ...")
// when a change replaced the pod: apply says only "configured".
func replacedWarning(w http.ResponseWriter, live, updated *v1.Pod, changed []*field.Path) {
	if updated.UID != live.UID {
		w.Header().Add("Warning", fmt.Sprintf(`299 - "pod %s/%s was replaced (new uid %s): pods on this node are immutable, so the change (%s) stopped the old pod and started a new one"`,
			live.Namespace, live.Name, updated.UID, joinPaths(changed)))
	}
}

// podChanges names the parts of a pod a patch changed: labels,
// annotations and the spec (status and the server's metadata are the
// node's, not the client's).
func podChanges(live, pod *v1.Pod) []*field.Path {
	var out []*field.Path
	if !equality.Semantic.DeepEqual(live.Labels, pod.Labels) && (len(live.Labels) > 0 || len(pod.Labels) > 0) {
		out = append(out, field.NewPath("metadata", "labels"))
	}
	if !equality.Semantic.DeepEqual(live.Annotations, pod.Annotations) && (len(live.Annotations) > 0 || len(pod.Annotations) > 0) {
		out = append(out, field.NewPath("metadata", "annotations"))
	}
	if !equality.Semantic.DeepEqual(live.Spec, pod.Spec) {
		out = append(out, specChanges(live.Spec, pod.Spec)...)
	}
	return out
}

// specChanges names the changed fields of a spec: each container's image
// (the change kubectl apply makes most), else the spec as a whole.
func specChanges(a, b v1.PodSpec) []*field.Path {
	var out []*field.Path
	if len(a.Containers) == len(b.Containers) {
		for i := range a.Containers {
			if a.Containers[i].Image != b.Containers[i].Image {
				out = append(out, field.NewPath("spec", "containers").Index(i).Child("image"))
			}
		}
		a2, b2 := a, b
		a2.Containers, b2.Containers = nil, nil
		for i := range a.Containers {
			ca, cb := a.Containers[i], b.Containers[i]
			ca.Image, cb.Image = "", ""
			if !equality.Semantic.DeepEqual(ca, cb) {
				out = append(out, field.NewPath("spec", "containers").Index(i))
			}
		}
		if !equality.Semantic.DeepEqual(a2, b2) {
			out = append(out, field.NewPath("spec"))
		}
		return out
	}
	return []*field.Path{field.NewPath("spec")}
}

// joinPaths lists field paths for a message.
func joinPaths(ps []*field.Path) string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return strings.Join(out, ", ")
}
