package manifest

// Validation of env[].valueFrom.fileKeyRef (the kubelet's EnvFiles), the
// API's rules (pkg/apis/core/validation validateFileKeySelector and
// validateFileKeyRefVolumes) with its field paths and messages.

import (
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateFileKeySelector checks one fileKeyRef: a key that is a valid
// environment variable name, a volume name that is a DNS label, and a path
// without "..".
func validateFileKeySelector(s *v1.FileKeySelector, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Key == "" {
		errs = append(errs, field.Required(p.Child("key"), ""))
	} else {
		for _, msg := range validation.IsRelaxedEnvVarName(s.Key) {
			errs = append(errs, field.Invalid(p.Child("key"), s.Key, msg))
		}
	}
	if s.VolumeName == "" {
		errs = append(errs, field.Required(p.Child("volumeName"), ""))
	} else {
		for _, msg := range validation.IsDNS1123Label(s.VolumeName) {
			errs = append(errs, field.Invalid(p.Child("volumeName"), s.VolumeName, msg))
		}
	}
	if s.Path == "" {
		errs = append(errs, field.Required(p.Child("path"), ""))
	} else if slices.Contains(strings.Split(s.Path, "/"), "..") {
		errs = append(errs, field.Invalid(p.Child("path"), s.Path, "must not contain '..'"))
	}
	return errs
}

// validateFileKeyRefVolumes checks that every fileKeyRef of the container
// names an emptyDir volume of the pod: the file is one an earlier
// container of the pod wrote there.
func validateFileKeyRefVolumes(env []v1.EnvVar, spec *v1.PodSpec, envPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ev := range env {
		if ev.ValueFrom == nil || ev.ValueFrom.FileKeyRef == nil || ev.ValueFrom.FileKeyRef.VolumeName == "" {
			continue
		}
		name := ev.ValueFrom.FileKeyRef.VolumeName
		p := envPath.Index(i).Child("valueFrom", "fileKeyRef", "volumeName")
		j := slices.IndexFunc(spec.Volumes, func(v v1.Volume) bool { return v.Name == name })
		switch {
		case j < 0:
			errs = append(errs, field.NotFound(p, name))
		case spec.Volumes[j].EmptyDir == nil:
			errs = append(errs, field.Invalid(p, name, "referenced volume must be of type emptyDir"))
		}
	}
	return errs
}
