package manifest

// The support rows and validation of the API data volumes (configMap,
// secret, downwardAPI, projected) and of the env sources (envFrom,
// valueFrom), kept next to each other. support.go lists the tables;
// validate.go calls the checks. The rules and messages are the API
// server's (pkg/apis/core/validation), where a lone node needs the same.

import (
	"fmt"
	"path"
	"reflect"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Fields of spec.volumes[*].configMap.
var configMapVolumeRules = ruleTable{typ: reflect.TypeFor[v1.ConfigMapVolumeSource](), path: "spec.volumes[*].configMap", rules: map[string]fieldRule{
	"name":        ruleLimited("a ConfigMap of the pod's namespace from the same manifest input (or the API)"),
	"items":       ruleOK,
	"defaultMode": ruleOK,
	"optional":    ruleOK,
	"defaultUser": ruleRefused(reasonNotYet + ": alpha in Kubernetes (AtomicWriteVolumeUserFields)"),
}}

// Fields of spec.volumes[*].secret.
var secretVolumeRules = ruleTable{typ: reflect.TypeFor[v1.SecretVolumeSource](), path: "spec.volumes[*].secret", rules: map[string]fieldRule{
	"secretName":  ruleLimited("a Secret of the pod's namespace from the same manifest input (or the API); the volume is a tmpfs"),
	"items":       ruleOK,
	"defaultMode": ruleOK,
	"optional":    ruleOK,
	"defaultUser": ruleRefused(reasonNotYet + ": alpha in Kubernetes (AtomicWriteVolumeUserFields)"),
}}

// Fields of spec.volumes[*].downwardAPI.
var downwardAPIVolumeRules = ruleTable{typ: reflect.TypeFor[v1.DownwardAPIVolumeSource](), path: "spec.volumes[*].downwardAPI", rules: map[string]fieldRule{
	"items":       ruleOK,
	"defaultMode": ruleOK,
	"defaultUser": ruleRefused(reasonNotYet + ": alpha in Kubernetes (AtomicWriteVolumeUserFields)"),
}}

// Fields of the items of configMap and secret volumes and projections.
var keyToPathRules = ruleTable{typ: reflect.TypeFor[v1.KeyToPath](), path: "spec.volumes[*].*.items[*]", rules: map[string]fieldRule{
	"key":  ruleOK,
	"path": ruleLimited("relative, without '..'"),
	"mode": ruleOK,
	"user": ruleRefused(reasonNotYet + ": alpha in Kubernetes (AtomicWriteVolumeUserFields)"),
}}

// Fields of the items of downwardAPI volumes and projections.
var downwardAPIFileRules = ruleTable{typ: reflect.TypeFor[v1.DownwardAPIVolumeFile](), path: "spec.volumes[*].downwardAPI.items[*]", rules: map[string]fieldRule{
	"path":             ruleLimited("relative, without '..'"),
	"fieldRef":         ruleLimited("metadata.name, namespace, uid, labels, annotations (rewritten when they change), labels['k'], annotations['k']"),
	"resourceFieldRef": ruleLimited("cpu and memory limits and requests of a named container, with divisor"),
	"mode":             ruleOK,
	"user":             ruleRefused(reasonNotYet + ": alpha in Kubernetes (AtomicWriteVolumeUserFields)"),
}}

// Fields of spec.volumes[*].projected.
var projectedVolumeRules = ruleTable{typ: reflect.TypeFor[v1.ProjectedVolumeSource](), path: "spec.volumes[*].projected", rules: map[string]fieldRule{
	"sources":     ruleOK,
	"defaultMode": ruleOK,
	"defaultUser": ruleRefused(reasonNotYet + ": alpha in Kubernetes (AtomicWriteVolumeUserFields)"),
}}

// Fields of spec.volumes[*].projected.sources[*].
var volumeProjectionRules = ruleTable{typ: reflect.TypeFor[v1.VolumeProjection](), path: "spec.volumes[*].projected.sources[*]", rules: map[string]fieldRule{
	"secret":              ruleOK,
	"downwardAPI":         ruleOK,
	"configMap":           ruleOK,
	"serviceAccountToken": ruleLimited("cluster mode (serve --kubeconfig) and pods from the API server only, others are refused at admission: requested through the TokenRequest API for the pod's service account, bound to the pod, refreshed at 80 % of its lifetime or after 24 h"),
	"clusterTrustBundle":  ruleLimited("cluster mode (serve --kubeconfig) and pods from the API server only, others are refused at admission: the certificates of the named ClusterTrustBundle, or of the signer's bundles the labelSelector matches, each once, in one PEM file; rewritten when the bundles change"),
	"podCertificate":      ruleLimited("cluster mode (serve --kubeconfig) and pods from the API server only, others are refused at admission: the node generates the key, requests the certificate with a PodCertificateRequest, waits for the signer to issue it, writes key and chain on the volume's tmpfs, and requests a new one at the issuer's beginRefreshAt"),
}}

// Fields of spec.volumes[*].projected.sources[*].clusterTrustBundle.
var clusterTrustBundleRules = ruleTable{typ: reflect.TypeFor[v1.ClusterTrustBundleProjection](), path: "spec.volumes[*].projected.sources[*].clusterTrustBundle", rules: map[string]fieldRule{
	"name":          ruleOK,
	"signerName":    ruleOK,
	"labelSelector": ruleLimited("with signerName; unset matches no bundle, {} every bundle of the signer"),
	"optional":      ruleLimited("a missing bundle (or no match) gives an empty file"),
	"path":          ruleLimited("relative, without '..'"),
	"user":          ruleRefused(reasonNotYet + ": alpha in Kubernetes (AtomicWriteVolumeUserFields)"),
}}

// Fields of spec.volumes[*].projected.sources[*].podCertificate.
var podCertificateRules = ruleTable{typ: reflect.TypeFor[v1.PodCertificateProjection](), path: "spec.volumes[*].projected.sources[*].podCertificate", rules: map[string]fieldRule{
	"signerName":           ruleOK,
	"keyType":              ruleLimited("RSA3072, RSA4096, ECDSAP256, ECDSAP384, ECDSAP521 or ED25519"),
	"maxExpirationSeconds": ruleLimited("at least 3600; the signer may issue a shorter one"),
	"credentialBundlePath": ruleLimited("relative, without '..'"),
	"keyPath":              ruleLimited("relative, without '..'"),
	"certificateChainPath": ruleLimited("relative, without '..'"),
	"userAnnotations":      ruleOK,
	"user":                 ruleRefused(reasonNotYet + ": alpha in Kubernetes (AtomicWriteVolumeUserFields)"),
}}

// Fields of spec.volumes[*].projected.sources[*].serviceAccountToken.
var serviceAccountTokenRules = ruleTable{typ: reflect.TypeFor[v1.ServiceAccountTokenProjection](), path: "spec.volumes[*].projected.sources[*].serviceAccountToken", rules: map[string]fieldRule{
	"audience":          ruleLimited("empty: the API server's audiences"),
	"expirationSeconds": ruleLimited("at least 600 (10 minutes), at most 2^32; default 3600"),
	"path":              ruleLimited("relative, without '..'"),
	"user":              ruleRefused(reasonNotYet + ": alpha in Kubernetes (AtomicWriteVolumeUserFields)"),
}}

// Fields of spec.containers[*].envFrom[*].
var envFromRules = ruleTable{typ: reflect.TypeFor[v1.EnvFromSource](), path: "spec.containers[*].envFrom[*]", rules: map[string]fieldRule{
	"prefix":       ruleOK,
	"configMapRef": ruleOK,
	"secretRef":    ruleOK,
}}

// checkDataVolumeSupport refuses the unsupported fields of an API data
// volume (the projected sources minikubelet cannot provide).
func checkDataVolumeSupport(vol *v1.Volume, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	keys := func(items []v1.KeyToPath, ip *field.Path) {
		for i := range items {
			errs = append(errs, refuseSet(reflect.ValueOf(items[i]), &keyToPathRules, nil, ip.Index(i))...)
		}
	}
	files := func(items []v1.DownwardAPIVolumeFile, ip *field.Path) {
		for i := range items {
			errs = append(errs, refuseSet(reflect.ValueOf(items[i]), &downwardAPIFileRules, nil, ip.Index(i))...)
		}
	}
	switch {
	case vol.ConfigMap != nil:
		errs = refuseSet(reflect.ValueOf(*vol.ConfigMap), &configMapVolumeRules, nil, p.Child("configMap"))
		keys(vol.ConfigMap.Items, p.Child("configMap", "items"))
	case vol.Secret != nil:
		errs = refuseSet(reflect.ValueOf(*vol.Secret), &secretVolumeRules, nil, p.Child("secret"))
		keys(vol.Secret.Items, p.Child("secret", "items"))
	case vol.DownwardAPI != nil:
		errs = refuseSet(reflect.ValueOf(*vol.DownwardAPI), &downwardAPIVolumeRules, nil, p.Child("downwardAPI"))
		files(vol.DownwardAPI.Items, p.Child("downwardAPI", "items"))
	case vol.Projected != nil:
		pp := p.Child("projected")
		errs = refuseSet(reflect.ValueOf(*vol.Projected), &projectedVolumeRules, nil, pp)
		for i, src := range vol.Projected.Sources {
			sp := pp.Child("sources").Index(i)
			errs = append(errs, refuseSet(reflect.ValueOf(src), &volumeProjectionRules, nil, sp)...)
			switch {
			case src.ConfigMap != nil:
				keys(src.ConfigMap.Items, sp.Child("configMap", "items"))
			case src.Secret != nil:
				keys(src.Secret.Items, sp.Child("secret", "items"))
			case src.DownwardAPI != nil:
				files(src.DownwardAPI.Items, sp.Child("downwardAPI", "items"))
			case src.ServiceAccountToken != nil:
				errs = append(errs, refuseSet(reflect.ValueOf(*src.ServiceAccountToken), &serviceAccountTokenRules, nil, sp.Child("serviceAccountToken"))...)
			case src.ClusterTrustBundle != nil:
				errs = append(errs, refuseSet(reflect.ValueOf(*src.ClusterTrustBundle), &clusterTrustBundleRules, nil, sp.Child("clusterTrustBundle"))...)
			case src.PodCertificate != nil:
				errs = append(errs, refuseSet(reflect.ValueOf(*src.PodCertificate), &podCertificateRules, nil, sp.Child("podCertificate"))...)
			}
		}
	}
	return errs
}

// checkEnvFromSupport refuses the unsupported fields of envFrom.
func checkEnvFromSupport(c *v1.Container, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range c.EnvFrom {
		errs = append(errs, refuseSet(reflect.ValueOf(c.EnvFrom[i]), &envFromRules, nil, p.Child("envFrom").Index(i))...)
	}
	return errs
}

// envFieldPaths are the fieldRef paths valid in env (the API's list);
// metadata.labels['k'] and metadata.annotations['k'] are valid too.
var envFieldPaths = []string{"metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName",
	"status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"}

// volumeFieldPaths are the fieldRef paths valid in downwardAPI volumes.
var volumeFieldPaths = []string{"metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"}

// resourceFieldPaths are the resources of resourceFieldRef minikubelet
// resolves (the API also allows ephemeral-storage and hugepages).
var resourceFieldPaths = []string{"limits.cpu", "limits.memory", "requests.cpu", "requests.memory"}

// validateFieldPath checks a fieldRef's path against the allowed list,
// plus subscripted labels and annotations with a valid key.
func validateFieldPath(fr *v1.ObjectFieldSelector, allowed []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if fr.APIVersion != "" && fr.APIVersion != "v1" {
		errs = append(errs, field.NotSupported(p.Child("apiVersion"), fr.APIVersion, []string{"v1"}))
	}
	fp := p.Child("fieldPath")
	if fr.FieldPath == "" {
		return append(errs, field.Required(fp, ""))
	}
	if base, key, ok := Subscript(fr.FieldPath); ok {
		switch base {
		case "metadata.labels":
			for _, msg := range validation.IsQualifiedName(key) {
				errs = append(errs, field.Invalid(fp, fr.FieldPath, msg))
			}
		case "metadata.annotations":
			for _, msg := range validation.IsQualifiedName(strings.ToLower(key)) {
				errs = append(errs, field.Invalid(fp, fr.FieldPath, msg))
			}
		default:
			errs = append(errs, field.Invalid(fp, fr.FieldPath, "does not support subscript"))
		}
		return errs
	}
	if !slices.Contains(allowed, fr.FieldPath) {
		errs = append(errs, field.NotSupported(fp, fr.FieldPath, allowed))
	}
	return errs
}

// validateResourceFieldRef checks a resourceFieldRef; containerName is
// required in volumes (needContainer).
func validateResourceFieldRef(r *v1.ResourceFieldSelector, needContainer bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if needContainer && r.ContainerName == "" {
		errs = append(errs, field.Required(p.Child("containerName"), ""))
	}
	rp := p.Child("resource")
	switch {
	case r.Resource == "":
		return append(errs, field.Required(rp, ""))
	case strings.HasSuffix(r.Resource, ".ephemeral-storage") || strings.Contains(r.Resource, ".hugepages-"):
		return append(errs, field.Forbidden(rp, fmt.Sprintf("%s: %s", reasonNotYet, r.Resource)))
	case !slices.Contains(resourceFieldPaths, r.Resource):
		return append(errs, field.NotSupported(rp, r.Resource, resourceFieldPaths))
	}
	if r.Divisor.IsZero() {
		return errs
	}
	var valid []string
	if strings.HasSuffix(r.Resource, ".cpu") {
		valid = []string{"1m", "1"}
	} else {
		valid = []string{"1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei"}
	}
	for _, v := range valid {
		if r.Divisor.Cmp(resource.MustParse(v)) == 0 {
			return errs
		}
	}
	what := "cpu"
	if !strings.HasSuffix(r.Resource, ".cpu") {
		what = "memory"
	}
	return append(errs, field.Invalid(p.Child("divisor"), r.Divisor.String(),
		fmt.Sprintf("only divisor's values %s are supported with the %s resource", strings.Join(valid, ", "), what)))
}

// validateEnvValueFrom checks the sources of one env valueFrom other than
// the count (validateEnv): fieldRef, resourceFieldRef, configMapKeyRef,
// secretKeyRef, fileKeyRef.
func validateEnvValueFrom(vf *v1.EnvVarSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if vf.FieldRef != nil {
		errs = append(errs, validateFieldPath(vf.FieldRef, envFieldPaths, p.Child("fieldRef"))...)
	}
	if vf.ResourceFieldRef != nil {
		errs = append(errs, validateResourceFieldRef(vf.ResourceFieldRef, false, p.Child("resourceFieldRef"))...)
	}
	keyRef := func(name, key string, kp *field.Path) {
		if name == "" {
			errs = append(errs, field.Required(kp.Child("name"), ""))
		}
		if key == "" {
			errs = append(errs, field.Required(kp.Child("key"), ""))
			return
		}
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(kp.Child("key"), key, msg))
		}
	}
	if r := vf.ConfigMapKeyRef; r != nil {
		keyRef(r.Name, r.Key, p.Child("configMapKeyRef"))
	}
	if r := vf.SecretKeyRef; r != nil {
		keyRef(r.Name, r.Key, p.Child("secretKeyRef"))
	}
	if r := vf.FileKeyRef; r != nil {
		errs = append(errs, validateFileKeySelector(r, p.Child("fileKeyRef"))...) // envfile.go
	}
	return errs
}

// validateEnvFrom checks a container's envFrom.
func validateEnvFrom(list []v1.EnvFromSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ef := range list {
		ip := p.Index(i)
		if ef.Prefix != "" {
			for _, msg := range validation.IsRelaxedEnvVarName(ef.Prefix) {
				errs = append(errs, field.Invalid(ip.Child("prefix"), ef.Prefix, msg))
			}
		}
		switch {
		case ef.ConfigMapRef != nil && ef.SecretRef != nil:
			errs = append(errs, field.Invalid(ip, "", "may not have more than one field specified at a time"))
		case ef.ConfigMapRef != nil:
			if ef.ConfigMapRef.Name == "" {
				errs = append(errs, field.Required(ip.Child("configMapRef", "name"), ""))
			}
		case ef.SecretRef != nil:
			if ef.SecretRef.Name == "" {
				errs = append(errs, field.Required(ip.Child("secretRef", "name"), ""))
			}
		default:
			errs = append(errs, field.Invalid(ip, "", "must specify one of: `configMapRef` or `secretRef`"))
		}
	}
	return errs
}

// validateDataVolume checks a configMap, secret, downwardAPI or projected
// volume source (nothing for the others).
func validateDataVolume(vol *v1.Volume, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	paths := map[string]bool{}
	switch {
	case vol.ConfigMap != nil:
		cp := p.Child("configMap")
		if vol.ConfigMap.Name == "" {
			errs = append(errs, field.Required(cp.Child("name"), ""))
		}
		errs = append(errs, validateMode(vol.ConfigMap.DefaultMode, cp.Child("defaultMode"))...)
		errs = append(errs, validateKeyToPaths(vol.ConfigMap.Items, cp.Child("items"), nil)...)
	case vol.Secret != nil:
		sp := p.Child("secret")
		if vol.Secret.SecretName == "" {
			errs = append(errs, field.Required(sp.Child("secretName"), ""))
		}
		errs = append(errs, validateMode(vol.Secret.DefaultMode, sp.Child("defaultMode"))...)
		errs = append(errs, validateKeyToPaths(vol.Secret.Items, sp.Child("items"), nil)...)
	case vol.DownwardAPI != nil:
		dp := p.Child("downwardAPI")
		errs = append(errs, validateMode(vol.DownwardAPI.DefaultMode, dp.Child("defaultMode"))...)
		errs = append(errs, validateDownwardAPIFiles(vol.DownwardAPI.Items, dp.Child("items"), nil)...)
	case vol.Projected != nil:
		pp := p.Child("projected")
		errs = append(errs, validateMode(vol.Projected.DefaultMode, pp.Child("defaultMode"))...)
		for i, src := range vol.Projected.Sources {
			sp := pp.Child("sources").Index(i)
			n := 0
			forEachJSONField(reflect.ValueOf(src), func(_ string, fv reflect.Value) {
				if !fv.IsNil() {
					n++
				}
			})
			if n != 1 {
				errs = append(errs, field.Forbidden(sp, "may not specify more than 1 volume type per source"))
				if n == 0 {
					errs[len(errs)-1] = field.Required(sp, "must specify exactly 1 volume type per source")
				}
			}
			switch {
			case src.ConfigMap != nil:
				errs = append(errs, validateKeyToPaths(src.ConfigMap.Items, sp.Child("configMap", "items"), paths)...)
				if src.ConfigMap.Name == "" {
					errs = append(errs, field.Required(sp.Child("configMap", "name"), ""))
				}
			case src.Secret != nil:
				errs = append(errs, validateKeyToPaths(src.Secret.Items, sp.Child("secret", "items"), paths)...)
				if src.Secret.Name == "" {
					errs = append(errs, field.Required(sp.Child("secret", "name"), ""))
				}
			case src.DownwardAPI != nil:
				errs = append(errs, validateDownwardAPIFiles(src.DownwardAPI.Items, sp.Child("downwardAPI", "items"), paths)...)
			case src.ServiceAccountToken != nil:
				errs = append(errs, validateServiceAccountToken(src.ServiceAccountToken, sp.Child("serviceAccountToken"), paths)...)
			case src.ClusterTrustBundle != nil:
				errs = append(errs, validateClusterTrustBundle(src.ClusterTrustBundle, sp.Child("clusterTrustBundle"), paths)...)
			case src.PodCertificate != nil:
				errs = append(errs, validatePodCertificate(src.PodCertificate, sp.Child("podCertificate"), paths)...)
			}
		}
	}
	return errs
}

// validateServiceAccountToken checks a serviceAccountToken projection as
// the API server does: a path, and a lifetime of 10 minutes to 2^32 s.
func validateServiceAccountToken(t *v1.ServiceAccountTokenProjection, p *field.Path, seen map[string]bool) field.ErrorList {
	errs := validateItemPath(t.Path, p.Child("path"), seen)
	if e := t.ExpirationSeconds; e != nil {
		switch {
		case *e < minTokenExpirationSeconds:
			errs = append(errs, field.Invalid(p.Child("expirationSeconds"), *e, "may not specify a duration less than 10 minutes"))
		case *e > maxTokenExpirationSeconds:
			errs = append(errs, field.Invalid(p.Child("expirationSeconds"), *e, "may not specify a duration larger than 2^32 seconds"))
		}
	}
	return errs
}

// validateClusterTrustBundle checks a clusterTrustBundle projection as the
// API server does: name or signerName (not both), a labelSelector only
// with signerName, a path.
func validateClusterTrustBundle(c *v1.ClusterTrustBundleProjection, p *field.Path, seen map[string]bool) field.ErrorList {
	var errs field.ErrorList
	switch {
	case c.Name != nil && c.SignerName != nil:
		errs = append(errs, field.Invalid(p, "", "only one of name and signerName may be used"))
	case c.Name != nil:
		if *c.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), "must be a valid object name"))
		}
		for _, msg := range validation.IsDNS1123Subdomain(strings.ReplaceAll(*c.Name, ":", "-")) {
			errs = append(errs, field.Invalid(p.Child("name"), *c.Name, "not a valid clustertrustbundlename: "+msg))
		}
		if c.LabelSelector != nil {
			errs = append(errs, field.Invalid(p.Child("labelSelector"), "", "labelSelector must be unset if name is specified"))
		}
	case c.SignerName != nil:
		if *c.SignerName == "" {
			errs = append(errs, field.Required(p.Child("signerName"), "must be a valid signer name"))
		} else if dom, _, ok := strings.Cut(*c.SignerName, "/"); !ok || dom == "" {
			errs = append(errs, field.Invalid(p.Child("signerName"), *c.SignerName, "must be a fully qualified domain and path of the form 'example.com/signer-name'"))
		}
		if c.LabelSelector != nil {
			if _, err := metav1.LabelSelectorAsSelector(c.LabelSelector); err != nil {
				errs = append(errs, field.Invalid(p.Child("labelSelector"), "", err.Error()))
			}
		}
	default:
		errs = append(errs, field.Required(p, "either name or signerName must be specified"))
	}
	return append(errs, validateItemPath(c.Path, p.Child("path"), seen)...)
}

// podCertificateKeyTypes are the API's key types of a podCertificate.
var podCertificateKeyTypes = []string{"RSA3072", "RSA4096", "ECDSAP256", "ECDSAP384", "ECDSAP521", "ED25519"}

// validatePodCertificate checks a podCertificate projection as the API
// server does: a signer, a key type, at least 3600 s, at least one path.
// (The API's upper bounds of maxExpirationSeconds depend on the signer;
// the signer enforces its own.)
func validatePodCertificate(c *v1.PodCertificateProjection, p *field.Path, seen map[string]bool) field.ErrorList {
	var errs field.ErrorList
	if dom, _, ok := strings.Cut(c.SignerName, "/"); !ok || dom == "" {
		errs = append(errs, field.Invalid(p.Child("signerName"), c.SignerName, "must be a fully qualified domain and path of the form 'example.com/signer-name'"))
	}
	if !slices.Contains(podCertificateKeyTypes, c.KeyType) {
		errs = append(errs, field.NotSupported(p.Child("keyType"), c.KeyType, podCertificateKeyTypes))
	}
	if e := c.MaxExpirationSeconds; e != nil && *e < 3600 {
		errs = append(errs, field.Invalid(p.Child("maxExpirationSeconds"), *e, "if provided, maxExpirationSeconds must be >= 3600"))
	}
	n := 0
	for _, f := range []struct{ name, path string }{
		{"credentialBundlePath", c.CredentialBundlePath}, {"keyPath", c.KeyPath}, {"certificateChainPath", c.CertificateChainPath},
	} {
		if f.path != "" {
			n++
			errs = append(errs, validateItemPath(f.path, p.Child(f.name), seen)...)
		}
	}
	if n == 0 {
		errs = append(errs, field.Required(p, "specify at least one of credentialBundlePath, keyPath, and certificateChainPath"))
	}
	return errs
}

// validateMode checks a file mode: 0 to 0777.
func validateMode(m *int32, p *field.Path) field.ErrorList {
	if m != nil && (*m < 0 || *m > 0o777) {
		return field.ErrorList{field.Invalid(p, *m, "must be a number between 0 and 0777 (octal), both inclusive")}
	}
	return nil
}

// validateKeyToPaths checks items (key → path). seen, when set, collects
// the paths of a projected volume, which must not repeat.
func validateKeyToPaths(items []v1.KeyToPath, p *field.Path, seen map[string]bool) field.ErrorList {
	var errs field.ErrorList
	for i, it := range items {
		ip := p.Index(i)
		if it.Key == "" {
			errs = append(errs, field.Required(ip.Child("key"), ""))
		} else {
			for _, msg := range validation.IsConfigMapKey(it.Key) {
				errs = append(errs, field.Invalid(ip.Child("key"), it.Key, msg))
			}
		}
		errs = append(errs, validateItemPath(it.Path, ip.Child("path"), seen)...)
		errs = append(errs, validateMode(it.Mode, ip.Child("mode"))...)
	}
	return errs
}

// validateDownwardAPIFiles checks downwardAPI items.
func validateDownwardAPIFiles(items []v1.DownwardAPIVolumeFile, p *field.Path, seen map[string]bool) field.ErrorList {
	var errs field.ErrorList
	for i, it := range items {
		ip := p.Index(i)
		errs = append(errs, validateItemPath(it.Path, ip.Child("path"), seen)...)
		errs = append(errs, validateMode(it.Mode, ip.Child("mode"))...)
		switch {
		case it.FieldRef != nil && it.ResourceFieldRef != nil:
			errs = append(errs, field.Invalid(ip, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
		case it.FieldRef != nil:
			errs = append(errs, validateFieldPath(it.FieldRef, volumeFieldPaths, ip.Child("fieldRef"))...)
		case it.ResourceFieldRef != nil:
			errs = append(errs, validateResourceFieldRef(it.ResourceFieldRef, true, ip.Child("resourceFieldRef"))...)
		default:
			errs = append(errs, field.Required(ip, "one of fieldRef and resourceFieldRef is required"))
		}
	}
	return errs
}

// validateItemPath checks the path of an item: relative, without '..'
// elements, not starting with '..' (the writer's own names).
func validateItemPath(p string, fp *field.Path, seen map[string]bool) field.ErrorList {
	var errs field.ErrorList
	switch {
	case p == "":
		return field.ErrorList{field.Required(fp, "")}
	case path.IsAbs(p):
		errs = append(errs, field.Invalid(fp, p, "must be a relative path"))
	case HasBacksteps(p):
		errs = append(errs, field.Invalid(fp, p, "must not contain '..'"))
	case strings.HasPrefix(p, ".."):
		errs = append(errs, field.Invalid(fp, p, "must not start with '..'"))
	}
	if seen != nil {
		if seen[p] {
			errs = append(errs, field.Invalid(fp, p, "conflicting duplicate paths"))
		}
		seen[p] = true
	}
	return errs
}

// Subscript splits "metadata.labels['key']" into its base and key.
func Subscript(path string) (base, key string, ok bool) {
	i := strings.Index(path, "['")
	if i < 0 || !strings.HasSuffix(path, "']") || i+2 > len(path)-2 {
		return "", "", false
	}
	return path[:i], path[i+2 : len(path)-2], true
}

// The API's bounds of a service account token projection's
// expirationSeconds (the kubelet's token manager uses the same).
const (
	// minTokenExpirationSeconds is the shortest lifetime the API allows.
	minTokenExpirationSeconds = 600
	// maxTokenExpirationSeconds is the longest (2^32 s).
	maxTokenExpirationSeconds = 1 << 32
)
