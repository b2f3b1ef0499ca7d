package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// effectiveKubeletConfiguration is what /configz serves: the settings in
// effect as a kubelet.config.k8s.io/v1beta1 KubeletConfiguration, as the
// kubelet's configz has it (kind and apiVersion set). Each field
// kubeletConfigFlags maps is filled from its flag's value after --config
// and the command line, so a field and the flag it came from never
// disagree; the fields of what minikubelet always does (webhook
// authentication, the review caches' lifetimes, a server, a registered
// node) are set to that. A field minikubelet does not implement is left
// out (its zero value), where the kubelet would show its default: it has
// no effect here.
func effectiveKubeletConfiguration(fs *flag.FlagSet) (*kubeletv1beta1.KubeletConfiguration, error) {
	cfg := &kubeletv1beta1.KubeletConfiguration{}
	paths := make([]string, 0, len(kubeletConfigFlags))
	for p := range kubeletConfigFlags {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, path := range paths {
		m := kubeletConfigFlags[path]
		f := fs.Lookup(m.flag)
		if f == nil {
			continue
		}
		v, err := configzValue(path, m.format, f.Value.String())
		if err != nil {
			return nil, fmt.Errorf("/configz: --%s: %w", m.flag, err)
		}
		if v == nil {
			continue
		}
		// One field at a time into the typed struct: encoding/json
		// merges into cfg, and a value its field cannot hold is named.
		var one any = v
		segs := strings.Split(path, ".")
		for i := len(segs) - 1; i >= 0; i-- {
			one = map[string]any{segs[i]: one}
		}
		js, err := json.Marshal(one)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(js, cfg); err != nil {
			return nil, fmt.Errorf("/configz: %s from --%s=%q: %w", path, m.flag, f.Value.String(), err)
		}
	}
	cfg.APIVersion, cfg.Kind = kubeletConfigAPIVersion, "KubeletConfiguration"
	t := true
	// What the kubelet server always does (agent/kubeletserver): bearer
	// tokens go to TokenReview, cached 2 minutes; decisions are cached 5
	// minutes (allowed) and 30 seconds (denied).
	cfg.Authentication.Webhook.Enabled = &t
	cfg.Authentication.Webhook.CacheTTL = metav1.Duration{Duration: 2 * time.Minute}
	cfg.Authorization.Webhook.CacheAuthorizedTTL = metav1.Duration{Duration: 5 * time.Minute}
	cfg.Authorization.Webhook.CacheUnauthorizedTTL = metav1.Duration{Duration: 30 * time.Second}
	cfg.EnableServer = &t
	cfg.RegisterNode = &t
	return cfg, nil
}

// configzValue turns a flag's text back into the JSON value of the field
// at path (the inverse of kcValue); nil leaves the field out.
func configzValue(path string, format kcFormat, text string) (any, error) {
	switch format {
	case kcList:
		if text == "" {
			return nil, nil
		}
		return strings.Split(text, ","), nil
	case kcLessThan, kcThreshold, kcEquals, kcQuantity:
		if text == "" {
			return nil, nil
		}
		sep := "="
		if format == kcLessThan || format == kcThreshold {
			sep = "<"
		}
		out := map[string]string{}
		for _, kv := range strings.Split(text, ",") {
			k, v, ok := strings.Cut(kv, sep)
			if !ok {
				return nil, fmt.Errorf("%q is not key%svalue", kv, sep)
			}
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
		return out, nil
	}
	t, ok := kubeletConfigFieldType(path)
	if !ok {
		return nil, fmt.Errorf("%s: no such KubeletConfiguration field", path)
	}
	if t == reflect.TypeOf(metav1.Duration{}) {
		return text, nil
	}
	switch t.Kind() {
	case reflect.Bool:
		return strconv.ParseBool(text)
	case reflect.Int, reflect.Int32, reflect.Int64:
		return strconv.ParseInt(text, 10, 64)
	case reflect.String:
		if text == "" {
			return nil, nil
		}
		return text, nil
	}
	return nil, fmt.Errorf("%s: field of type %s has no flag form", path, t)
}

// kubeletConfigFieldType is the Go type of the KubeletConfiguration field
// at a JSON path (a pointer's element type).
func kubeletConfigFieldType(path string) (reflect.Type, bool) {
	t := reflect.TypeOf(kubeletv1beta1.KubeletConfiguration{})
	for _, seg := range strings.Split(path, ".") {
		f, ok := jsonFields(t)[seg]
		if !ok {
			return nil, false
		}
		t = f.Type
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
	}
	return t, true
}
