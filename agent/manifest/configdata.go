package manifest

// ConfigMaps and Secrets of a manifest: the API server's defaults,
// validation and decoding. Where their data goes on the node is
// agent/source's (configdata.go: the engine's ConfigStore).

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	strictjson "sigs.k8s.io/json"

	"github.com/minikubelet/minikubelet/agent/manifest/decodeerr"
)

// SetConfigMapDefaults applies the API server's defaults: namespace.
func SetConfigMapDefaults(cm *v1.ConfigMap) {
	if cm.Namespace == "" {
		cm.Namespace = v1.NamespaceDefault
	}
}

// SetSecretDefaults applies the API server's defaults: namespace, type
// Opaque, and stringData merged into data (stringData wins).
func SetSecretDefaults(s *v1.Secret) {
	if s.Namespace == "" {
		s.Namespace = v1.NamespaceDefault
	}
	if s.Type == "" {
		s.Type = v1.SecretTypeOpaque
	}
	if len(s.StringData) > 0 {
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
		s.StringData = nil
	}
}

// maxConfigSize is the API server's limit on the data of one ConfigMap or
// Secret (1 MiB).
const maxConfigSize = v1.MaxSecretSize

// validateConfigMeta checks the name and namespace of a ConfigMap or
// Secret, and refuses the metadata an API server would set.
func validateConfigMeta(name, namespace string, meta *field.Path, extra field.ErrorList) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(meta.Child("name"), "name or generateName is required"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(name) {
			errs = append(errs, field.Invalid(meta.Child("name"), name, msg))
		}
	}
	for _, msg := range validation.IsDNS1123Label(namespace) {
		errs = append(errs, field.Invalid(meta.Child("namespace"), namespace, msg))
	}
	return append(errs, extra...)
}

// refusedConfigMeta refuses metadata only an API server sets.
func refusedConfigMeta(m *v1.ConfigMap, s *v1.Secret) field.ErrorList {
	var errs field.ErrorList
	meta := field.NewPath("metadata")
	om := func() (gen string, rv string, ts bool) {
		if m != nil {
			return m.GenerateName, m.ResourceVersion, !m.CreationTimestamp.IsZero()
		}
		return s.GenerateName, s.ResourceVersion, !s.CreationTimestamp.IsZero()
	}
	gen, rv, ts := om()
	if gen != "" {
		errs = append(errs, field.Forbidden(meta.Child("generateName"), reasonNever+": there is no API server to generate names"))
	}
	if rv != "" {
		errs = append(errs, field.Forbidden(meta.Child("resourceVersion"), reasonNever+": set by the API server"))
	}
	if ts {
		errs = append(errs, field.Forbidden(meta.Child("creationTimestamp"), reasonNever+": set by the API server"))
	}
	return errs
}

// validateConfigKeys checks the keys of a data map with the API's
// configmap key rules and adds their sizes to *total.
func validateConfigKeys[V string | []byte](data map[string]V, p *field.Path, total *int) field.ErrorList {
	var errs field.ErrorList
	for _, k := range slices.Sorted(maps.Keys(data)) {
		for _, msg := range validation.IsConfigMapKey(k) {
			errs = append(errs, field.Invalid(p.Key(k), k, msg))
		}
		*total += len(data[k])
	}
	return errs
}

// ValidateConfigMap checks a defaulted ConfigMap as the API server would:
// name, namespace, keys of data and binaryData (disjoint), total size.
func ValidateConfigMap(cm *v1.ConfigMap) field.ErrorList {
	errs := validateConfigMeta(cm.Name, cm.Namespace, field.NewPath("metadata"), refusedConfigMeta(cm, nil))
	total := 0
	errs = append(errs, validateConfigKeys(cm.Data, field.NewPath("data"), &total)...)
	errs = append(errs, validateConfigKeys(cm.BinaryData, field.NewPath("binaryData"), &total)...)
	for _, k := range slices.Sorted(maps.Keys(cm.BinaryData)) {
		if _, dup := cm.Data[k]; dup {
			errs = append(errs, field.Invalid(field.NewPath("binaryData").Key(k), k, "duplicate of key present in data"))
		}
	}
	if total > maxConfigSize {
		errs = append(errs, field.TooLong(field.NewPath(""), "", maxConfigSize))
	}
	return errs
}

// ValidateSecret checks a defaulted Secret as the API server would: name,
// namespace, keys, total size and the keys its type requires.
func ValidateSecret(s *v1.Secret) field.ErrorList {
	errs := validateConfigMeta(s.Name, s.Namespace, field.NewPath("metadata"), refusedConfigMeta(nil, s))
	dataPath := field.NewPath("data")
	total := 0
	errs = append(errs, validateConfigKeys(s.Data, dataPath, &total)...)
	if total > maxConfigSize {
		errs = append(errs, field.TooLong(dataPath, "", maxConfigSize))
	}
	require := func(key string) {
		if _, ok := s.Data[key]; !ok {
			errs = append(errs, field.Required(dataPath.Key(key), ""))
		}
	}
	switch s.Type {
	case v1.SecretTypeServiceAccountToken:
		errs = append(errs, field.Forbidden(field.NewPath("type"), reasonNever+": service account tokens are issued by an API server"))
	case v1.SecretTypeDockercfg, v1.SecretTypeDockerConfigJson:
		key := v1.DockerConfigKey
		if s.Type == v1.SecretTypeDockerConfigJson {
			key = v1.DockerConfigJsonKey
		}
		if v, ok := s.Data[key]; !ok {
			require(key)
		} else if !json.Valid(v) {
			errs = append(errs, field.Invalid(dataPath.Key(key), "<secret contents redacted>", "must be valid JSON"))
		}
	case v1.SecretTypeBasicAuth:
		_, u := s.Data[v1.BasicAuthUsernameKey]
		_, p := s.Data[v1.BasicAuthPasswordKey]
		if !u && !p {
			errs = append(errs, field.Required(dataPath.Key(v1.BasicAuthUsernameKey), ""))
			errs = append(errs, field.Required(dataPath.Key(v1.BasicAuthPasswordKey), ""))
		}
	case v1.SecretTypeSSHAuth:
		require(v1.SSHAuthPrivateKey)
	case v1.SecretTypeTLS:
		require(v1.TLSCertKey)
		require(v1.TLSPrivateKeyKey)
	}
	return errs
}

// decodeConfigObject strictly decodes one v1 ConfigMap or Secret document.
func decodeConfigObject(data []byte, kind string, itemPath *field.Path) ([]manifestPod, []string) {
	var (
		obj any
		mp  = manifestPod{itemPath: itemPath}
	)
	if kind == "Secret" {
		mp.secret = &v1.Secret{}
		obj = mp.secret
	} else {
		mp.cm = &v1.ConfigMap{}
		obj = mp.cm
	}
	strictErrs, err := strictjson.UnmarshalStrict(data, obj)
	if err != nil {
		return nil, []string{decodeerr.Problem(data, reflect.TypeOf(obj), itemPath, err)}
	}
	if problems := StrictProblems(strictErrs, itemPath); len(problems) > 0 {
		return nil, problems
	}
	return []manifestPod{mp}, nil
}

// prepareConfigObjects defaults and validates the ConfigMaps and Secrets
// of mps and returns problems with theirs appended.
func prepareConfigObjects(mps []manifestPod, problems []string) []string {
	seen := map[string]string{} // kind/namespace/name → where first defined
	for _, mp := range mps {
		var (
			errs           field.ErrorList
			kind, ns, name string
		)
		switch {
		case mp.cm != nil:
			SetConfigMapDefaults(mp.cm)
			errs = ValidateConfigMap(mp.cm)
			kind, ns, name = "ConfigMap", mp.cm.Namespace, mp.cm.Name
		case mp.secret != nil:
			SetSecretDefaults(mp.secret)
			errs = ValidateSecret(mp.secret)
			kind, ns, name = "Secret", mp.secret.Namespace, mp.secret.Name
		default:
			continue
		}
		where := mp.where
		if mp.itemPath != nil {
			where = strings.TrimSpace(where + " " + mp.itemPath.String())
		}
		if name != "" {
			key := kind + "/" + ns + "/" + name
			if first, dup := seen[key]; dup {
				e := field.Duplicate(field.NewPath("metadata", "name"), ns+"/"+name)
				e.Detail = fmt.Sprintf("%s also defined in %s", kind, first)
				errs = append(errs, e)
			} else {
				seen[key] = where
			}
		}
		for _, e := range errs {
			problems = append(problems, mp.prefix()+prefixField(e, mp.itemPath).Error())
		}
	}
	return problems
}
