package manifest

// The API server's rules for spec.nodeSelector and spec.affinity. Admission
// evaluates them against the node (agent/node/admission.go).

import (
	"slices"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateNodeSelector checks spec.nodeSelector: label keys and values.
// fldPath is spec.nodeSelector.
func validateNodeSelector(sel map[string]string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	keys := make([]string, 0, len(sel))
	for k := range sel {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(fldPath, k, msg))
		}
		for _, msg := range validation.IsValidLabelValue(sel[k]) {
			errs = append(errs, field.Invalid(fldPath.Key(k), sel[k], msg))
		}
	}
	return errs
}

// validateNodeAffinity checks spec.affinity for what admission can evaluate:
// nodeAffinity only, its required terms well formed (the API's rules:
// In/NotIn need values, Exists/DoesNotExist none, Gt/Lt one integer;
// matchFields only metadata.name with In/NotIn and one value). The preferred
// terms are scheduler scoring and have no effect on a lone node. fldPath is
// spec.affinity.
func validateNodeAffinity(aff *v1.Affinity, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if aff == nil {
		return nil
	}
	if aff.PodAffinity != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("podAffinity"), reasonNever+": there is no scheduler to place pods next to each other"))
	}
	if aff.PodAntiAffinity != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("podAntiAffinity"), reasonNever+": there is no scheduler to spread pods"))
	}
	na := aff.NodeAffinity
	if na == nil || na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return errs
	}
	reqPath := fldPath.Child("nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
	terms := na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) == 0 {
		errs = append(errs, field.Required(reqPath.Child("nodeSelectorTerms"), "must have at least one node selector term"))
	}
	for i, term := range terms {
		tp := reqPath.Child("nodeSelectorTerms").Index(i)
		for j, r := range term.MatchExpressions {
			errs = append(errs, validateNodeSelectorRequirement(r, tp.Child("matchExpressions").Index(j))...)
		}
		for j, r := range term.MatchFields {
			p := tp.Child("matchFields").Index(j)
			if r.Key != "metadata.name" {
				errs = append(errs, field.NotSupported(p.Child("key"), r.Key, []string{"metadata.name"}))
			}
			if r.Operator != v1.NodeSelectorOpIn && r.Operator != v1.NodeSelectorOpNotIn {
				errs = append(errs, field.NotSupported(p.Child("operator"), r.Operator, []string{string(v1.NodeSelectorOpIn), string(v1.NodeSelectorOpNotIn)}))
			} else if len(r.Values) != 1 {
				errs = append(errs, field.Invalid(p.Child("values"), r.Values, "must have exactly one value"))
			}
		}
	}
	return errs
}

// validateNodeSelectorRequirement checks one matchExpressions entry.
func validateNodeSelectorRequirement(r v1.NodeSelectorRequirement, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(r.Key) {
		errs = append(errs, field.Invalid(p.Child("key"), r.Key, msg))
	}
	switch r.Operator {
	case v1.NodeSelectorOpIn, v1.NodeSelectorOpNotIn:
		if len(r.Values) == 0 {
			errs = append(errs, field.Required(p.Child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
		}
	case v1.NodeSelectorOpExists, v1.NodeSelectorOpDoesNotExist:
		if len(r.Values) > 0 {
			errs = append(errs, field.Forbidden(p.Child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
		}
	case v1.NodeSelectorOpGt, v1.NodeSelectorOpLt:
		if len(r.Values) != 1 {
			errs = append(errs, field.Required(p.Child("values"), "must be specified single value when `operator` is 'Lt' or 'Gt'"))
		} else if _, err := strconv.ParseInt(r.Values[0], 10, 64); err != nil {
			errs = append(errs, field.Invalid(p.Child("values").Index(0), r.Values[0], "must be an integer"))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("operator"), r.Operator,
			[]string{"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"}))
	}
	return errs
}
