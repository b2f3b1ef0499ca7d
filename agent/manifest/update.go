package manifest

// The API server's rule for updating a pod (k8s.io/kubernetes
// pkg/apis/core/validation ValidatePodUpdate), for the pods the local API
// accepted: metadata (labels, annotations) changes freely; of the spec,
// only the images of containers and init containers, activeDeadlineSeconds
// (set, or lowered), additions to tolerations (and a changed
// tolerationSeconds), the removal of scheduling gates and a negative
// terminationGracePeriodSeconds set to 1. Anything else is refused with
// the API server's Forbidden error on "spec".

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// UpdatablePodSpecFields lists, in the API server's words, the fields of a
// pod's spec an update may change (updatablePodSpecFields).
var UpdatablePodSpecFields = []string{
	"`spec.containers[*].image`",
	"`spec.initContainers[*].image`",
	"`spec.activeDeadlineSeconds`",
	"`spec.tolerations` (only additions to existing tolerations)",
	"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
}

// PodUpdateForbidden is the start of the detail of the Forbidden error on
// "spec" of a refused update, as the API server words it.
var PodUpdateForbidden = "pod updates may not change fields other than " + strings.Join(UpdatablePodSpecFields, ",")

// ValidatePodUpdate returns what makes the update of oldPod to newPod
// illegal for a user, as the API server's ValidatePodUpdate does. Both are
// defaulted pods (SetPodDefaults); newPod must be valid on its own
// (ValidatePod: the caller checks that too, as the API server does). The
// metadata the server owns (uid, creationTimestamp, deletion fields) must
// be unchanged: the caller copies what the client left empty.
//
// Where it differs from the API server: the detail of the spec error lists
// the changed fields as JSON paths (spec.containers[0].command) where the
// API server prints a cmp.Diff of its internal PodSpec type; the rules for
// gated pods (nodeSelector and affinity changes while schedulingGates
// remain) are left out, as a pod bound to this node is never gated.
func ValidatePodUpdate(newPod, oldPod *v1.Pod) field.ErrorList {
	meta := field.NewPath("metadata")
	var errs field.ErrorList
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(newPod.Name, oldPod.Name, meta.Child("name"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(newPod.Namespace, oldPod.Namespace, meta.Child("namespace"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(newPod.UID, oldPod.UID, meta.Child("uid"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(newPod.CreationTimestamp, oldPod.CreationTimestamp, meta.Child("creationTimestamp"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(newPod.DeletionTimestamp, oldPod.DeletionTimestamp, meta.Child("deletionTimestamp"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(newPod.DeletionGracePeriodSeconds, oldPod.DeletionGracePeriodSeconds, meta.Child("deletionGracePeriodSeconds"))...)
	errs = append(errs, validatePodAnnotationUpdates(newPod.Annotations, oldPod.Annotations, meta.Child("annotations"))...)

	spec := field.NewPath("spec")
	cerrs, stop := validateContainerUpdates(newPod.Spec.Containers, oldPod.Spec.Containers, spec.Child("containers"))
	errs = append(errs, cerrs...)
	if stop {
		return errs
	}
	cerrs, stop = validateContainerUpdates(newPod.Spec.InitContainers, oldPod.Spec.InitContainers, spec.Child("initContainers"))
	errs = append(errs, cerrs...)
	if stop {
		return errs
	}

	// activeDeadlineSeconds: from nil to a value, or from a value to a
	// lower one (not below 0).
	ads := spec.Child("activeDeadlineSeconds")
	if n := newPod.Spec.ActiveDeadlineSeconds; n != nil {
		if *n < 0 || *n > math.MaxInt32 {
			return append(errs, field.Invalid(ads, *n, validation.InclusiveRangeError(0, math.MaxInt32)))
		}
		if o := oldPod.Spec.ActiveDeadlineSeconds; o != nil && *o < *n {
			return append(errs, field.Invalid(ads, *n, "must be less than or equal to previous value"))
		}
	} else if oldPod.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Invalid(ads, newPod.Spec.ActiveDeadlineSeconds, "must not update from a positive integer to nil value"))
	}
	errs = append(errs, validateOnlyAddedTolerations(newPod.Spec.Tolerations, oldPod.Spec.Tolerations, spec.Child("tolerations"))...)
	errs = append(errs, validateOnlyDeletedSchedulingGates(newPod.Spec.SchedulingGates, oldPod.Spec.SchedulingGates, spec.Child("schedulingGates"))...)

	if apiequality.Semantic.DeepEqual(newPod.Spec, oldPod.Spec) {
		return errs
	}
	// The updatable fields take the old values; what differs then is
	// what may not change.
	munged := newPod.Spec.DeepCopy()
	for i := range munged.Containers {
		munged.Containers[i].Image = oldPod.Spec.Containers[i].Image
	}
	for i := range munged.InitContainers {
		munged.InitContainers[i].Image = oldPod.Spec.InitContainers[i].Image
	}
	munged.ActiveDeadlineSeconds = oldPod.Spec.ActiveDeadlineSeconds
	munged.SchedulingGates = oldPod.Spec.SchedulingGates
	munged.Tolerations = oldPod.Spec.Tolerations
	if o := oldPod.Spec.TerminationGracePeriodSeconds; o != nil && *o < 0 &&
		munged.TerminationGracePeriodSeconds != nil && *munged.TerminationGracePeriodSeconds == 1 {
		munged.TerminationGracePeriodSeconds = o
	}
	if !apiequality.Semantic.DeepEqual(*munged, oldPod.Spec) {
		detail := PodUpdateForbidden
		if changed := SpecChanges(oldPod.Spec, *munged); len(changed) > 0 {
			detail += "\nchanged: " + strings.Join(changed, ", ")
		}
		errs = append(errs, field.Forbidden(spec, detail))
	}
	return errs
}

// validateContainerUpdates is the API server's ValidateContainerUpdates:
// the list keeps its length (stop: nothing else is checked then) and every
// image is set, without surrounding whitespace.
func validateContainerUpdates(newC, oldC []v1.Container, path *field.Path) (field.ErrorList, bool) {
	if len(newC) != len(oldC) {
		return field.ErrorList{field.Forbidden(path, "pod updates may not add or remove containers")}, true
	}
	var errs field.ErrorList
	for i, c := range newC {
		if c.Image == "" {
			errs = append(errs, field.Required(path.Index(i).Child("image"), ""))
		}
		if len(strings.TrimSpace(c.Image)) != len(c.Image) {
			errs = append(errs, field.Invalid(path.Index(i).Child("image"), c.Image, "must not have leading or trailing whitespace"))
		}
	}
	return errs, false
}

// validatePodAnnotationUpdates is the update half of the API server's
// ValidatePodSpecificAnnotationUpdates: the mirror pod annotation and the
// deprecated AppArmor annotations may be neither added, changed nor
// removed.
func validatePodAnnotationUpdates(newA, oldA map[string]string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for k, ov := range oldA {
		if nv, ok := newA[k]; ok && nv == ov {
			continue
		}
		if strings.HasPrefix(k, v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix) {
			errs = append(errs, field.Forbidden(path.Key(k), "may not remove or update AppArmor annotations"))
		}
		if k == v1.MirrorPodAnnotationKey {
			errs = append(errs, field.Forbidden(path.Key(k), "may not remove or update mirror pod annotation"))
		}
	}
	for _, k := range sortedKeys(newA) {
		if _, ok := oldA[k]; ok {
			continue
		}
		if strings.HasPrefix(k, v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix) {
			errs = append(errs, field.Forbidden(path.Key(k), "may not add AppArmor annotations"))
		}
		if k == v1.MirrorPodAnnotationKey {
			errs = append(errs, field.Forbidden(path.Key(k), "may not add mirror pod annotation"))
		}
	}
	return errs
}

// validateOnlyAddedTolerations is the API server's: every old toleration
// is still there (its tolerationSeconds may change).
func validateOnlyAddedTolerations(newT, oldT []v1.Toleration, path *field.Path) field.ErrorList {
	for _, o := range oldT {
		o.TolerationSeconds = nil
		if !slices.ContainsFunc(newT, func(n v1.Toleration) bool {
			n.TolerationSeconds = nil
			return reflect.DeepEqual(o, n)
		}) {
			return field.ErrorList{field.Forbidden(path, "existing toleration can not be modified except its tolerationSeconds")}
		}
	}
	return nil
}

// validateOnlyDeletedSchedulingGates is the API server's: no gate is added.
func validateOnlyDeletedSchedulingGates(newG, oldG []v1.PodSchedulingGate, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, g := range newG {
		if !slices.ContainsFunc(oldG, func(o v1.PodSchedulingGate) bool { return o.Name == g.Name }) {
			errs = append(errs, field.Forbidden(path.Index(i).Child("name"), fmt.Sprintf("only deletion is allowed, but found new scheduling gate '%s'", g.Name)))
		}
	}
	return errs
}

// SpecChanges names the fields that differ between two specs as JSON paths
// under "spec" (spec.containers[0].command), the deepest that differ; a
// list whose length changed is named as a whole.
func SpecChanges(a, b v1.PodSpec) []string {
	var ja, jb any
	for _, x := range []struct {
		spec *v1.PodSpec
		out  *any
	}{{&a, &ja}, {&b, &jb}} {
		data, err := json.Marshal(x.spec)
		if err != nil {
			return nil // a PodSpec always marshals
		}
		if err := json.Unmarshal(data, x.out); err != nil {
			return nil
		}
	}
	var out []string
	jsonChanges("spec", ja, jb, &out)
	return out
}

// jsonChanges appends the paths under path where a and b (decoded JSON)
// differ.
func jsonChanges(path string, a, b any, out *[]string) {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			break
		}
		keys := sortedKeys(av)
		for k := range bv {
			if _, ok := av[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			jsonChanges(path+"."+k, av[k], bv[k], out)
		}
		return
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			break
		}
		for i := range av {
			jsonChanges(fmt.Sprintf("%s[%d]", path, i), av[i], bv[i], out)
		}
		return
	}
	if !reflect.DeepEqual(a, b) {
		*out = append(*out, path)
	}
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
