package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/minikubelet/minikubelet/agent/eviction"
)

// A KubeletConfiguration file (kubelet.config.k8s.io/v1beta1, what kubeadm
// writes to /var/lib/kubelet/config.yaml) is read as --config beside
// minikubelet's own format (flag names as keys). Its fields are mapped onto
// serve's flags; flags given on the command line win, as for the kubelet.
//
// A field counts as set when the file has it with a value other than its
// type's zero (0, "", "0s", {}, []) — the kubelet defaults those, and kubeadm
// writes many of them. Pointer fields (cgroupsPerQOS: false) count whenever
// present. A set field minikubelet does not implement is named in the one
// warning line serve logs at start; so is a field the v1beta1 type does not
// have (the kubelet too decodes such a file leniently with a warning).

// kcFormat is how a field's value becomes a flag's value.
type kcFormat int

const (
	kcScalar    kcFormat = iota // as is
	kcList                      // [a, b] -> a,b
	kcLessThan                  // {signal: v} -> signal<v (eviction thresholds)
	kcEquals                    // {k: v} -> k=v
	kcQuantity                  // {k: quantity} -> k=v, each value a resource quantity
	kcThreshold                 // as kcLessThan, each threshold validated
)

// kcMapping maps one field path onto one flag.
type kcMapping struct {
	flag   string
	format kcFormat
}

// kubeletConfigFlags are the fields minikubelet implements, by field path.
// A flag not registered on serve's flag set (max-pods) makes its field
// unimplemented, unless the value is in kubeletConfigMatches. /configz
// (configz.go) fills these fields back from their flags.
var kubeletConfigFlags = map[string]kcMapping{
	"address":                          {"address", kcScalar},
	"port":                             {"port", kcScalar},
	"readOnlyPort":                     {"read-only-port", kcScalar},
	"healthzPort":                      {"healthz-port", kcScalar},
	"healthzBindAddress":               {"healthz-bind-address", kcScalar},
	"tlsCertFile":                      {"tls-cert-file", kcScalar},
	"tlsPrivateKeyFile":                {"tls-private-key-file", kcScalar},
	"authentication.x509.clientCAFile": {"client-ca-file", kcScalar},
	"authentication.anonymous.enabled": {"anonymous-auth", kcScalar},
	"authorization.mode":               {"authorization-mode", kcScalar},
	"staticPodPath":                    {"manifest-dir", kcScalar},
	"podLogsDir":                       {"pod-log-dir", kcScalar},
	"podCIDR":                          {"pod-cidr", kcScalar},
	"maxPods":                          {"max-pods", kcScalar},
	"cgroupDriver":                     {"cgroup-driver", kcScalar},
	"cgroupsPerQOS":                    {"cgroups-per-qos", kcScalar},
	"clusterDomain":                    {"cluster-domain", kcScalar},
	"clusterDNS":                       {"cluster-dns", kcList},
	"resolvConf":                       {"resolv-conf", kcScalar},
	"containerRuntimeEndpoint":         {"runtime-endpoint", kcScalar},
	"runtimeRequestTimeout":            {"runtime-request-timeout", kcScalar},
	"imageGCHighThresholdPercent":      {"image-gc-high-threshold", kcScalar},
	"imageGCLowThresholdPercent":       {"image-gc-low-threshold", kcScalar},
	"imageMinimumGCAge":                {"image-minimum-gc-age", kcScalar},
	"imageMaximumGCAge":                {"image-maximum-gc-age", kcScalar},
	"evictionHard":                     {"eviction-hard", kcThreshold},
	"evictionSoft":                     {"eviction-soft", kcThreshold},
	"evictionSoftGracePeriod":          {"eviction-soft-grace-period", kcEquals},
	"evictionMinimumReclaim":           {"eviction-minimum-reclaim", kcEquals},
	"evictionPressureTransitionPeriod": {"eviction-pressure-transition-period", kcScalar},
	"evictionMaxPodGracePeriod":        {"eviction-max-pod-grace-period", kcScalar},
	"podPidsLimit":                     {"pod-max-pids", kcScalar},
	"kubeReserved":                     {"kube-reserved", kcQuantity},
	"systemReserved":                   {"system-reserved", kcQuantity},
	"allowedUnsafeSysctls":             {"allowed-unsafe-sysctls", kcList},
	"containerLogMaxSize":              {"container-log-max-size", kcScalar},
	"containerLogMaxFiles":             {"container-log-max-files", kcScalar},
	"rotateCertificates":               {"rotate-certificates", kcScalar},
	"serverTLSBootstrap":               {"rotate-server-certificates", kcScalar},
	"userNamespaces.idsPerPod":         {"userns-ids-per-pod", kcScalar},
}

// kubeletConfigMatches are field values minikubelet's behaviour already
// has (the kubelet's defaults, mostly): no flag, no warning. Any other
// value of these fields warns.
var kubeletConfigMatches = map[string]string{
	"enableServer":                   "true",
	"registerNode":                   "true",
	"seccompDefault":                 "false",
	"authentication.webhook.enabled": "true", // bearer tokens go to TokenReview
	// The kubelet server's review caches (agent/kubeletserver/cache.go).
	"authentication.webhook.cacheTTL":            "2m0s",
	"authorization.webhook.cacheAuthorizedTTL":   "5m0s",
	"authorization.webhook.cacheUnauthorizedTTL": "30s",
}

// kubeletConfigAPIVersion and kind identify a KubeletConfiguration.
const kubeletConfigAPIVersion = "kubelet.config.k8s.io/v1beta1"

// isKubeletConfiguration reports whether the decoded file is a
// KubeletConfiguration; another apiVersion with that kind is an error.
func isKubeletConfiguration(m map[string]any) (bool, error) {
	kind, _ := m["kind"].(string)
	if kind != "KubeletConfiguration" {
		return false, nil
	}
	if v, _ := m["apiVersion"].(string); v != kubeletConfigAPIVersion {
		return false, fmt.Errorf("apiVersion: %q is not supported (use %s)", v, kubeletConfigAPIVersion)
	}
	return true, nil
}

// applyKubeletConfiguration sets serve's flags from a KubeletConfiguration
// (data, YAML or JSON) where the command line did not set them. It returns
// the warning naming the set fields it does not implement and the unknown
// ones ("" if none). Errors name the field path.
func applyKubeletConfiguration(fs *flag.FlagSet, data []byte) (string, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return "", err
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var raw map[string]any
	if err := dec.Decode(&raw); err != nil {
		return "", err
	}
	var leaves []kcLeaf
	var unknown []string
	walkKubeletConfig(raw, reflect.TypeOf(kubeletv1beta1.KubeletConfiguration{}), "", &leaves, &unknown)
	sort.Slice(leaves, func(i, j int) bool { return leaves[i].path < leaves[j].path })
	// Types: each field decoded alone into the published struct, so that
	// a value of the wrong type is refused with its path.
	for _, l := range leaves {
		var one any = l.value
		segs := strings.Split(l.path, ".")
		for i := len(segs) - 1; i >= 0; i-- {
			one = map[string]any{segs[i]: one}
		}
		js, err := json.Marshal(one)
		if err != nil {
			return "", fmt.Errorf("%s: %w", l.path, err)
		}
		var typed kubeletv1beta1.KubeletConfiguration
		if err := json.Unmarshal(js, &typed); err != nil {
			return "", fmt.Errorf("%s: invalid value: %w", l.path, err)
		}
	}

	var unimpl []string
	for _, l := range leaves {
		if l.path == "apiVersion" || l.path == "kind" || !l.set {
			continue
		}
		m, mapped := kubeletConfigFlags[l.path]
		if mapped && fs.Lookup(m.flag) != nil {
			v, err := kcValue(l, m.format)
			if err != nil {
				return "", err
			}
			if flagGiven(fs, m.flag) {
				continue
			}
			if err := fs.Set(m.flag, v); err != nil {
				return "", fmt.Errorf("%s: %w", l.path, err)
			}
			continue
		}
		if want, ok := kubeletConfigMatches[l.path]; ok && scalarString(l.value) == want {
			continue
		}
		unimpl = append(unimpl, l.path)
	}
	sort.Strings(unimpl)
	sort.Strings(unknown)
	var parts []string
	if len(unimpl) > 0 {
		parts = append(parts, "not implemented, ignored: "+strings.Join(unimpl, ", "))
	}
	if len(unknown) > 0 {
		parts = append(parts, "unknown to "+kubeletConfigAPIVersion+", ignored: "+strings.Join(unknown, ", "))
	}
	return strings.Join(parts, "; "), nil
}

// kcLeaf is one field of the file: a scalar, a list, or a map-typed field.
type kcLeaf struct {
	path  string
	value any
	set   bool
}

var jsonUnmarshaler = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()

// walkKubeletConfig collects the fields of raw (a JSON object decoded into
// t) with their paths, and the paths of keys t does not have.
func walkKubeletConfig(raw map[string]any, t reflect.Type, prefix string, leaves *[]kcLeaf, unknown *[]string) {
	fields := jsonFields(t)
	for k, v := range raw {
		path := k
		if prefix != "" {
			path = prefix + "." + k
		}
		f, ok := fields[k]
		if !ok {
			*unknown = append(*unknown, path)
			continue
		}
		ft := f.Type
		ptr := ft.Kind() == reflect.Pointer
		if ptr {
			ft = ft.Elem()
		}
		if sub, isMap := v.(map[string]any); isMap && ft.Kind() == reflect.Struct &&
			!reflect.PointerTo(ft).Implements(jsonUnmarshaler) && ft != reflect.TypeOf(metav1.Duration{}) {
			walkKubeletConfig(sub, ft, path, leaves, unknown)
			continue
		}
		set := v != nil
		if !ptr {
			set = !zeroValue(v)
		}
		*leaves = append(*leaves, kcLeaf{path: path, value: v, set: set})
	}
}

// jsonFields maps a struct's JSON names to its fields, inline ones included.
func jsonFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" && strings.Contains(opts, "inline") || f.Anonymous && name == "" {
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
			continue
		}
		out[name] = f
	}
	return out
}

// zeroValue reports whether a decoded JSON value is its type's zero, which
// the kubelet replaces with its default.
func zeroValue(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == "" || v == "0" || v == "0s"
	case json.Number:
		f, err := v.Float64()
		return err == nil && f == 0
	case bool:
		return !v
	case []any:
		return len(v) == 0
	case map[string]any:
		for _, e := range v {
			if !zeroValue(e) {
				return false
			}
		}
		return true
	}
	return false
}

func scalarString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	}
	return fmt.Sprint(v)
}

// kcValue turns a field's value into its flag's value, validating what the
// flag alone would report without the field path.
func kcValue(l kcLeaf, format kcFormat) (string, error) {
	switch format {
	case kcList:
		list, _ := l.value.([]any)
		var out []string
		for i, e := range list {
			s := scalarString(e)
			if strings.Contains(s, ",") {
				return "", fmt.Errorf("%s[%d]: %q must not contain a comma", l.path, i, s)
			}
			out = append(out, s)
		}
		return strings.Join(out, ","), nil
	case kcLessThan, kcEquals, kcQuantity, kcThreshold:
		m, _ := l.value.(map[string]any)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var out []string
		for _, k := range keys {
			v := scalarString(m[k])
			switch format {
			case kcThreshold:
				if _, err := eviction.ParseThresholds(k+"<"+v, "", ""); err != nil {
					return "", fmt.Errorf("%s[%q]: invalid threshold %q: %w", l.path, k, v, err)
				}
			case kcQuantity:
				if _, err := resource.ParseQuantity(v); err != nil {
					return "", fmt.Errorf("%s[%q]: invalid quantity %q: %w", l.path, k, v, err)
				}
			}
			if strings.ContainsAny(k+v, ",=<") {
				return "", fmt.Errorf("%s[%q]: invalid value %q", l.path, k, v)
			}
			sep := "="
			if format == kcThreshold || format == kcLessThan {
				sep = "<"
			}
			out = append(out, k+sep+v)
		}
		return strings.Join(out, ","), nil
	}
	return scalarString(l.value), nil
}

// kubeadmAliases registers the kubelet's flag names that kubeadm writes
// into /var/lib/kubelet/kubeadm-flags.env (KUBELET_KUBEADM_ARGS) and that
// serve knows under another name or accepts without using. notices are the
// warnings to log at start, filled while fs parses.
type kubeadmAliases struct {
	notices []string
}

func (a *kubeadmAliases) register(fs *flag.FlagSet) {
	alias := func(name, target string) {
		if fs.Lookup(name) != nil {
			return
		}
		fs.Func(name, "the kubelet's name of --"+target, func(s string) error { return fs.Set(target, s) })
	}
	alias("container-runtime-endpoint", "runtime-endpoint")
	alias("hostname-override", "node-name")
	ignored := func(name, why string) {
		if fs.Lookup(name) != nil {
			return // implemented by now
		}
		fs.Func(name, "accepted for the kubelet's command line, not used: "+why, func(s string) error {
			a.notices = append(a.notices, fmt.Sprintf("--%s=%s is not used: %s", name, s, why))
			return nil
		})
	}
	// minikubelet creates no sandbox image of its own; the runtime's
	// configured one (containerd's sandbox_image) is used, as with the
	// kubelet since 1.27 where the flag only pins the image against GC.
	ignored("pod-infra-container-image", "the runtime's sandbox image is used")
}
