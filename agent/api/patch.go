package api

// This file serves PATCH and PUT on a pod: what kubectl apply sends
// (client-side apply: a strategic merge patch carrying the last-applied
// annotation), kubectl label, annotate, set image and edit (patches),
// kubectl patch --type strategic|merge|json, and kubectl replace (PUT).
//
// The result is the desired pod, which goes to the backend's UpdatePod
// (PodUpdater): the daemon applies the API server's update rule (labels,
// annotations, images, activeDeadlineSeconds and added tolerations change
// in place; anything else in the spec is a 422 Forbidden on "spec") and a
// PUT's resourceVersion precondition (409). A patch is applied to the pod
// as it is now and retried (up to patchRetries times) when the pod changed
// before it was stored, as the API server does, unless the patch itself
// names a resourceVersion. A patch that changes nothing answers the pod as
// it is (kubectl apply: "unchanged"). A backend without PodUpdater refuses
// a change with a 422 naming the changed fields.
//
// The strategic merge here is the subset a pod's patches use (merge keys of
// the pod's lists, $patch: delete/replace, $setElementOrder,
// $deleteFromPrimitiveList, $retainKeys), written out because
// k8s.io/apimachinery's strategicpatch links kube-openapi's schemas and the
// gnostic models into the binary (TestBinaryLinksNoFullClientset). JSON
// patches (RFC 6902) are applied by gopkg.in/evanphx/json-patch.v4, the
// library and version the API server applies them with, so edge cases
// (negative indexes, "test" on numbers) behave as there.

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"reflect"
	"slices"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	strictjson "sigs.k8s.io/json"

	"github.com/minikubelet/minikubelet/agent/manifest/decodeerr"
)

// PodUpdater is a Backend that can change a pod submitted through the API,
// in place, under the API server's update rule (daemon: UpdatePod). A
// pod.ResourceVersion other than "" is a precondition: Conflict (409) when
// the pod changed since. Errors as Backend's.
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

// patchRetries bounds how often a patch is applied again to a pod that
// changed meanwhile (the API server's patch retries on conflict too).
const patchRetries = 5

// maxJSONPatchOperations is the API server's limit of operations in one
// JSON patch.
const maxJSONPatchOperations = 10000

// maxJSONPatchCopyBytes bounds what the "copy" operations of one JSON patch
// may copy in all (jsonpatch.AccumulatedCopySizeLimit), so that a 1 MiB
// patch cannot grow a pod without bound by copying it into itself.
const maxJSONPatchCopyBytes = 3 << 20

func init() {
	// The library's only knob is this variable; nothing else in the
	// binary applies JSON patches.
	jsonpatch.AccumulatedCopySizeLimit = maxJSONPatchCopyBytes
}

// patchJSON applies a patch of media type mt to the JSON object live.
func patchJSON(mt string, patch, live []byte, resource string) ([]byte, error) {
	if mt == "application/json-patch+json" {
		ops, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("decode the JSON patch: %v", err))
		}
		if len(ops) > maxJSONPatchOperations {
			return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("the JSON patch has %d operations, more than the %d allowed", len(ops), maxJSONPatchOperations))
		}
		out, err := ops.Apply(live)
		if err != nil {
			// A 422 Invalid as from the API server, whose message drops
			// the library's error ("the server rejected our request due
			// to an error in our request"); here it says which operation
			// failed.
			return nil, &apierrors.StatusError{ErrStatus: metav1.Status{
				Status: metav1.StatusFailure, Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid,
				Message: fmt.Sprintf("the server rejected our request due to an error in our request: the JSON patch does not apply: %v", err),
			}}
		}
		return out, nil
	}
	var p any
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("decode patch: %v", err))
	}
	var doc map[string]any
	if err := json.Unmarshal(live, &doc); err != nil {
		return nil, fmt.Errorf("decode %s: %w", resource, err)
	}
	var patched any
	switch mt {
	case "application/strategic-merge-patch+json":
		pm, ok := p.(map[string]any)
		if !ok {
			return nil, apierrors.NewBadRequest("a strategic merge patch is a JSON object")
		}
		m, err := strategicMerge(doc, pm)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("apply the strategic merge patch: %v", err))
		}
		patched = m
	case "application/merge-patch+json":
		patched = mergePatch(doc, p)
	default:
		return nil, unsupportedMediaType(fmt.Sprintf("PATCH on %s takes application/strategic-merge-patch+json (kubectl apply, kubectl patch), application/merge-patch+json (kubectl patch --type merge), application/json-patch+json (kubectl patch --type json) or application/apply-patch+yaml (kubectl apply --server-side), not %q", resource, mt))
	}
	out, err := json.Marshal(patched)
	if err != nil {
		return nil, fmt.Errorf("encode patched %s: %w", resource, err)
	}
	return out, nil
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
	for attempt := 1; ; attempt++ {
		live, err := s.backend.GetPod(ns, name)
		if err != nil {
			return err
		}
		liveJSON, err := json.Marshal(live)
		if err != nil {
			return fmt.Errorf("encode pod: %w", err)
		}
		j, err := patchJSON(mt, body, liveJSON, podsResource.Resource)
		if err != nil {
			return err
		}
		var pod v1.Pod
		if err := decodePatched(j, podsResource, name, &pod); err != nil {
			return err
		}
		if err := immutableMeta("Pod", name, pod.Name, ns, pod.Namespace); err != nil {
			return err
		}
		// The patch's own resourceVersion is a precondition; the one
		// read here is not the client's: a change meanwhile applies the
		// patch again.
		precondition := pod.ResourceVersion != live.ResourceVersion
		updated, err := s.updatePod(r.Context(), live, &pod)
		if apierrors.IsConflict(err) && !precondition && attempt < patchRetries {
			continue
		}
		if err != nil {
			return err
		}
		writePod(w, http.StatusOK, updated)
		return nil
	}
}

// replacePod serves PUT: the body is the whole desired pod (kubectl
// replace, client-go's Update). As on the API server: the name and
// namespace are the URL's, a pod that does not exist is a 404 (pods are
// not created by PUT), the status is ignored, and a resourceVersion is a
// precondition (409 when the pod changed since; none: unconditional).
func (s *Server) replacePod(w http.ResponseWriter, r *http.Request) error {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	j, err := s.readPodJSON(w, r)
	if err != nil {
		return err
	}
	var pod v1.Pod
	strictErrs, err := strictjson.UnmarshalStrict(j, &pod)
	if err != nil {
		return apierrors.NewBadRequest("decode pod: " + decodeerr.Problem(j, reflect.TypeFor[v1.Pod](), nil, err))
	}
	if len(strictErrs) > 0 {
		return strictDecodingError(podsResource.Resource, name, strictErrs)
	}
	if (pod.APIVersion != "" && pod.APIVersion != "v1") || (pod.Kind != "" && pod.Kind != "Pod") {
		return apierrors.NewBadRequest(fmt.Sprintf("the body is apiVersion %q, kind %q: this path takes apiVersion v1, kind Pod", pod.APIVersion, pod.Kind))
	}
	switch pod.Name {
	case "":
		pod.Name = name
	case name:
	default:
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", pod.Name, name))
	}
	switch pod.Namespace {
	case "":
		pod.Namespace = ns
	case ns:
	default:
		return apierrors.NewBadRequest(fmt.Sprintf("the namespace of the provided object (%q) does not match the namespace sent on the request (%q)", pod.Namespace, ns))
	}
	live, err := s.backend.GetPod(ns, name)
	if err != nil {
		return err
	}
	updated, err := s.updatePod(r.Context(), live, &pod)
	if err != nil {
		return err
	}
	writePod(w, http.StatusOK, updated)
	return nil
}

// updatePod makes pod (patched, put or applied; live's namespace/name) the
// desired pod through the backend's PodUpdater and returns the pod as
// updated. Its status is the node's, ignored. A pod whose labels,
// annotations and spec are live's answers live, unchanged, unless it
// names another resourceVersion (the backend answers that precondition).
func (s *Server) updatePod(ctx context.Context, live, pod *v1.Pod) (*v1.Pod, error) {
	pod.Status = v1.PodStatus{}
	changed := podChanges(live, pod)
	if len(changed) == 0 && (pod.ResourceVersion == "" || pod.ResourceVersion == live.ResourceVersion) {
		return live, nil
	}
	u, ok := s.backend.(PodUpdater)
	if !ok {
		var errs field.ErrorList
		for _, f := range changed {
			errs = append(errs, field.Forbidden(f, "this node cannot change a pod: delete it and create it again (kubectl replace --force -f FILE)"))
		}
		if len(errs) == 0 {
			return live, nil
		}
		return nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, live.Name, errs)
	}
	return u.UpdatePod(ctx, pod)
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
