package manifest

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestSupportTables_CoverAPI fails when a field of the API types has no
// entry in its table (a k8s.io/api upgrade added one: decide and list it),
// or when a table lists a field the type does not have (a typo).
func TestSupportTables_CoverAPI(t *testing.T) {
	// The tables the issue asks for, and every other table.
	for _, typ := range []reflect.Type{reflect.TypeFor[v1.PodSpec](), reflect.TypeFor[v1.Container](), reflect.TypeFor[v1.VolumeSource]()} {
		found := false
		for _, tbl := range ruleTables {
			if tbl.typ == typ || (typ == reflect.TypeFor[v1.VolumeSource]() && tbl.typ == reflect.TypeFor[v1.Volume]()) {
				found = true
			}
		}
		require.True(t, found, "no table for %s", typ)
	}
	for _, tbl := range ruleTables {
		t.Run(tbl.typ.Name(), func(t *testing.T) {
			names := jsonFieldNames(tbl.typ)
			require.NotEmpty(t, names)
			for _, name := range names {
				_, ok := tbl.rules[name]
				assert.True(t, ok, "%s.%s (%s) has no entry in support.go: decide supported or refused", tbl.path, name, tbl.typ)
			}
			for name := range tbl.rules {
				assert.Contains(t, names, name, "%s lists %q, which %s does not have", tbl.path, name, tbl.typ)
			}
		})
	}
	for name := range initContainerOverrides {
		assert.Contains(t, jsonFieldNames(reflect.TypeFor[v1.Container]()), name)
	}
}

func TestJSONFieldNames_FlattensInline(t *testing.T) {
	names := jsonFieldNames(reflect.TypeFor[v1.Volume]())
	assert.Equal(t, "name", names[0])
	assert.Contains(t, names, "persistentVolumeClaim")
	assert.Contains(t, names, "emptyDir")
	assert.Equal(t, []string{"kind", "apiVersion", "metadata", "spec", "status"}, jsonFieldNames(reflect.TypeFor[v1.Pod]()))
}

func TestSupportedFields(t *testing.T) {
	rows := SupportedFields()
	byPath := map[string]FieldSupport{}
	for _, r := range rows {
		_, dup := byPath[r.Path]
		require.False(t, dup, "duplicate row %s", r.Path)
		byPath[r.Path] = r
		if !r.Supported {
			assert.NotEmpty(t, r.Note, "refused row %s needs a reason", r.Path)
		}
	}
	for _, tc := range []struct {
		path      string
		supported bool
	}{
		{"spec.containers[*].image", true},
		{"spec.nodeName", true},
		{"spec.tolerations", true},
		{"spec.schedulerName", true},
		{"spec.affinity", true},
		{"spec.nodeSelector", true},
		{"spec.overhead", false},
		{"spec.ephemeralContainers", true},
		{"spec.readinessGates", true},
		{"spec.activeDeadlineSeconds", true},
		{"spec.containers[*].securityContext", true},
		{"spec.securityContext.appArmorProfile", true},
		{"spec.containers[*].livenessProbe", probesSupported},
		{"spec.initContainers[*].restartPolicy", true},
		{"spec.volumes[*].emptyDir", true},
		{"spec.volumes[*].hostPath", true},
		{"spec.volumes[*].persistentVolumeClaim", false},
		{"spec.volumes[*].image", true},
		{"spec.volumes[*].image.reference", true},
		{"spec.volumes[*].image.pullPolicy", true},
		{"spec.containers[*].env[*].valueFrom.secretKeyRef", true},
		{"spec.containers[*].env[*].valueFrom.fileKeyRef", true},
		{"spec.volumes[*].projected.sources[*].serviceAccountToken", true},
		{"spec.volumes[*].projected.sources[*].serviceAccountToken.user", false},
		{"spec.volumes[*].projected.sources[*].clusterTrustBundle", true},
		{"spec.volumes[*].projected.sources[*].clusterTrustBundle.user", false},
		{"spec.volumes[*].projected.sources[*].podCertificate", true},
		{"spec.volumes[*].projected.sources[*].podCertificate.user", false},
		{"metadata.generateName", false},
		{"status", false},
	} {
		t.Run(tc.path, func(t *testing.T) {
			r, ok := byPath[tc.path]
			require.True(t, ok, "no row %s", tc.path)
			assert.Equal(t, tc.supported, r.Supported)
		})
	}
	assert.True(t, strings.HasPrefix(byPath["spec.tolerations"].Note, "accepted, no effect"))
}

// TestCheckSupport_RefusesEveryRefusedField sets, one at a time, every field
// a table refuses (to a non-zero value built by reflection) on a valid pod and
// expects exactly one Forbidden error, at that field's path, with the
// table's reason.
func TestCheckSupport_RefusesEveryRefusedField(t *testing.T) {
	type target struct {
		tbl       *ruleTable
		overrides map[string]fieldRule
		// get returns the struct that holds the table's fields in pod.
		get  func(*v1.Pod) reflect.Value
		path string
	}
	targets := []target{
		{&podRules, nil, func(p *v1.Pod) reflect.Value { return reflect.ValueOf(p).Elem() }, ""},
		{&metaRules, nil, func(p *v1.Pod) reflect.Value { return reflect.ValueOf(&p.ObjectMeta).Elem() }, "metadata"},
		{&specRules, nil, func(p *v1.Pod) reflect.Value { return reflect.ValueOf(&p.Spec).Elem() }, "spec"},
		{&containerRules, nil, func(p *v1.Pod) reflect.Value { return reflect.ValueOf(&p.Spec.Containers[0]).Elem() }, "spec.containers[0]"},
		{&containerRules, initContainerOverrides, func(p *v1.Pod) reflect.Value { return reflect.ValueOf(&p.Spec.InitContainers[0]).Elem() }, "spec.initContainers[0]"},
		{&volumeRules, nil, func(p *v1.Pod) reflect.Value { return reflect.ValueOf(&p.Spec.Volumes[0]).Elem() }, "spec.volumes[0]"},
		{&emptyDirRules, nil, func(p *v1.Pod) reflect.Value { return reflect.ValueOf(p.Spec.Volumes[0].EmptyDir).Elem() }, "spec.volumes[0].emptyDir"},
		{&volumeMountRules, nil, func(p *v1.Pod) reflect.Value { return reflect.ValueOf(&p.Spec.Containers[0].VolumeMounts[0]).Elem() }, "spec.containers[0].volumeMounts[0]"},
		{&envVarSourceRules, nil, func(p *v1.Pod) reflect.Value { return reflect.ValueOf(p.Spec.Containers[0].Env[0].ValueFrom).Elem() }, "spec.containers[0].env[0].valueFrom"},
		{&resourcesRules, nil, func(p *v1.Pod) reflect.Value { return reflect.ValueOf(&p.Spec.Containers[0].Resources).Elem() }, "spec.containers[0].resources"},
	}
	fixture := func() *v1.Pod {
		p := basePod()
		p.Spec.InitContainers = []v1.Container{{Name: "init", Image: "busybox"}}
		p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
		p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
		p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "N", ValueFrom: &v1.EnvVarSource{}}}
		return p
	}
	require.Empty(t, checkSupport(fixture()), "the fixture itself uses only supported fields")

	for _, tg := range targets {
		for _, name := range jsonFieldNames(tg.tbl.typ) {
			r, ok := tg.overrides[name]
			if !ok {
				r = tg.tbl.rules[name]
			}
			if r.supported {
				continue
			}
			path := name
			if tg.path != "" {
				path = tg.path + "." + name
			}
			t.Run(path, func(t *testing.T) {
				pod := fixture()
				setJSONField(t, tg.get(pod), name, r.unset)
				errs := checkSupport(pod)
				require.Len(t, errs, 1, "%v", errs)
				assert.Equal(t, field.ErrorTypeForbidden, errs[0].Type)
				assert.Equal(t, path, errs[0].Field)
				assert.Equal(t, r.note, errs[0].Detail)
			})
		}
	}
}

// TestCheckSupport_EmptyValuesAreUnset checks that empty objects and lists,
// and pointers to the default value, count as not set.
func TestCheckSupport_EmptyValuesAreUnset(t *testing.T) {
	pod := basePod()
	pod.Spec.SecurityContext = &v1.PodSecurityContext{}
	pod.Spec.ImagePullSecrets = []v1.LocalObjectReference{}
	hostUsers, share := true, false
	pod.Spec.HostUsers = &hostUsers
	pod.Spec.ShareProcessNamespace = &share
	pod.Spec.Containers[0].SecurityContext = &v1.SecurityContext{}
	assert.Empty(t, checkSupport(pod))

	hostUsers = false
	assert.Empty(t, checkSupport(pod), "hostUsers: false is supported (a user namespace of the pod's own)")
}

// setJSONField sets the field with JSON name name of struct value v to a
// non-zero value, other than unset.
func setJSONField(t *testing.T, v reflect.Value, name string, unset any) {
	t.Helper()
	done := false
	forEachJSONField(v, func(n string, fv reflect.Value) {
		if n != name || done {
			return
		}
		fv.Set(nonZero(fv.Type(), unset))
		done = true
	})
	require.True(t, done, "no field %s", name)
}

// nonZero builds a value of type typ that fieldIsSet reports as set.
func nonZero(typ reflect.Type, unset any) reflect.Value {
	v := reflect.New(typ).Elem()
	switch typ.Kind() {
	case reflect.Pointer:
		e := nonZero(typ.Elem(), nil)
		if unset != nil && e.Interface() == unset {
			e = reflect.New(typ.Elem()).Elem() // the zero value, e.g. false for hostUsers
		}
		p := reflect.New(typ.Elem())
		p.Elem().Set(e)
		return p
	case reflect.Slice:
		return reflect.Append(v, nonZero(typ.Elem(), nil))
	case reflect.Map:
		m := reflect.MakeMap(typ)
		m.SetMapIndex(nonZero(typ.Key(), nil), nonZero(typ.Elem(), nil))
		return m
	case reflect.Struct:
		if typ == reflect.TypeFor[time.Time]() {
			return reflect.ValueOf(time.Unix(1, 0))
		}
		// Some structs (resource.Quantity, metav1.Time) keep their state
		// unexported: try exported fields first, else use the type's own
		// JSON decoding of a sample.
		for i := 0; i < typ.NumField(); i++ {
			if typ.Field(i).IsExported() && typ.Field(i).Type.Kind() != reflect.Struct {
				v.Field(i).Set(nonZero(typ.Field(i).Type, nil))
				return v
			}
		}
		for i := 0; i < typ.NumField(); i++ {
			if typ.Field(i).IsExported() {
				v.Field(i).Set(nonZero(typ.Field(i).Type, nil))
				if !v.IsZero() {
					return v
				}
			}
		}
		return v
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1)
	}
	return v
}
