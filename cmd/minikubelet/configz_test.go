package main

import (
	"encoding/json"
	"flag"
	"sort"
	"strings"
	"testing"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"
)

// kubeletServerFlagsOf is the kubeletServerFlags registered on fs.
func kubeletServerFlagsOf(t *testing.T, fs *flag.FlagSet) kubeletServerFlags {
	t.Helper()
	k := kubeletServerFlags{fs: fs}
	get := func(name string) string { return flagValue(t, fs, name) }
	k.address, k.authorizationMode, k.healthzBindAddress = get("address"), get("authorization-mode"), get("healthz-bind-address")
	k.anonymousAuth = get("anonymous-auth") == "true"
	for name, p := range map[string]*int{"read-only-port": &k.readOnlyPort, "healthz-port": &k.healthzPort} {
		if err := json.Unmarshal([]byte(get(name)), p); err != nil {
			t.Fatal(err)
		}
	}
	return k
}

func TestKubeletServerFlagDefaults(t *testing.T) {
	fs, _ := serveFlagSet(t)
	for name, want := range map[string]string{
		"anonymous-auth": "false", "authorization-mode": "Webhook", "read-only-port": "0",
		"healthz-port": "10248", "healthz-bind-address": "127.0.0.1",
	} {
		if got := flagValue(t, fs, name); got != want {
			t.Errorf("--%s defaults to %q, want the kubelet's %q", name, got, want)
		}
	}
	k := kubeletServerFlagsOf(t, fs)
	if w := k.warnings(); len(w) != 0 {
		t.Errorf("the defaults warn: %q", w)
	}
}

// The KubeletConfiguration's authentication.anonymous.enabled,
// authorization.mode, readOnlyPort, healthzPort and healthzBindAddress set
// the flags; the command line wins; each weakening setting warns once.
func TestKubeletConfigurationServerAuthFields(t *testing.T) {
	body := kcHeader + `
authentication:
  anonymous:
    enabled: true
authorization:
  mode: AlwaysAllow
readOnlyPort: 10255
healthzPort: 10300
healthzBindAddress: 0.0.0.0
`
	fs, warning, err := loadConfig(t, body)
	if err != nil {
		t.Fatal(err)
	}
	if warning != "" {
		t.Errorf("warning: %q", warning)
	}
	want := map[string]string{"anonymous-auth": "true", "authorization-mode": "AlwaysAllow", "read-only-port": "10255",
		"healthz-port": "10300", "healthz-bind-address": "0.0.0.0"}
	for name, v := range want {
		if got := flagValue(t, fs, name); got != v {
			t.Errorf("--%s = %q, want %q", name, got, v)
		}
	}
	k := kubeletServerFlagsOf(t, fs)
	w := k.warnings()
	if len(w) != 4 {
		t.Fatalf("want one warning each for anonymous-auth, AlwaysAllow, the read-only port and healthz on 0.0.0.0, got %q", w)
	}
	for i, prefix := range []string{"--anonymous-auth", "--authorization-mode=AlwaysAllow: every request, anonymous ones included", "--read-only-port=10255", "--healthz-bind-address=0.0.0.0"} {
		if !strings.HasPrefix(w[i], prefix) {
			t.Errorf("warning %d = %q, want it to start with %q", i, w[i], prefix)
		}
	}
	if err := k.check(fs, true); err != nil {
		t.Errorf("cluster mode: %v", err)
	}
	if err := k.check(fs, false); err == nil || !strings.Contains(err.Error(), "needs --kubeconfig") {
		t.Errorf("standalone with the server's non-default settings: %v, want needs --kubeconfig", err)
	}

	// The command line wins over the file.
	fs, _, err = loadConfig(t, body, "--authorization-mode", "Webhook", "--anonymous-auth=false", "--read-only-port", "0")
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]string{"authorization-mode": "Webhook", "anonymous-auth": "false", "read-only-port": "0"} {
		if got := flagValue(t, fs, name); got != v {
			t.Errorf("--%s = %q, want the command line's %q", name, got, v)
		}
	}

	// healthzPort 0 is the kubelet's "off": present, it counts.
	fs, _, err = loadConfig(t, kcHeader+"healthzPort: 0\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := flagValue(t, fs, "healthz-port"); got != "0" {
		t.Errorf("healthzPort: 0 gives --healthz-port %q, want 0 (off)", got)
	}
}

// kubeadm's config.yaml names the server settings with their default
// values: accepted without --kubeconfig too (before the bootstrap), and
// not warned about.
func TestKubeletConfigurationKubeadmServerDefaults(t *testing.T) {
	fs, warning, err := loadConfig(t, kcHeader+`
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
authorization:
  mode: Webhook
healthzBindAddress: 127.0.0.1
healthzPort: 10248
readOnlyPort: 0
`)
	if err != nil {
		t.Fatal(err)
	}
	if warning != "" {
		t.Errorf("warning: %q", warning)
	}
	k := kubeletServerFlagsOf(t, fs)
	if err := k.check(fs, false); err != nil {
		t.Errorf("standalone with kubeadm's defaults: %v", err)
	}
	if w := k.warnings(); len(w) != 0 {
		t.Errorf("warnings: %q", w)
	}
}

func TestKubeletConfigurationRefusesUnknownAuthorizationMode(t *testing.T) {
	fs, _, err := loadConfig(t, kcHeader+"authorization:\n  mode: RBAC\n")
	if err != nil {
		t.Fatal(err)
	}
	k := kubeletServerFlagsOf(t, fs)
	err = k.check(fs, true)
	if err == nil || !strings.Contains(err.Error(), "authorization.mode") || !strings.Contains(err.Error(), "Webhook or AlwaysAllow") {
		t.Errorf("check: %v, want the field path and the choices", err)
	}
}

// /configz is the settings in effect in KubeletConfiguration form: a
// file's values come back in their fields, and reading /configz back as
// --config sets every flag to the value it has (nothing lost, nothing
// unimplemented claimed).
func TestEffectiveKubeletConfigurationRoundTrips(t *testing.T) {
	for name, body := range map[string]string{
		"defaults": kcHeader,
		"a full file": kcHeader + `
address: 10.0.0.5
port: 10260
readOnlyPort: 10255
healthzPort: 10300
authentication:
  anonymous:
    enabled: true
  x509:
    clientCAFile: /etc/kubernetes/pki/ca.crt
authorization:
  mode: AlwaysAllow
staticPodPath: /etc/kubernetes/manifests
cgroupDriver: systemd
clusterDomain: example.org
clusterDNS: [10.96.0.10]
runtimeRequestTimeout: 4m
imageGCHighThresholdPercent: 90
evictionHard:
  memory.available: 200Mi
  nodefs.available: 5%
evictionSoft:
  memory.available: 500Mi
evictionSoftGracePeriod:
  memory.available: 1m30s
kubeReserved:
  cpu: 100m
allowedUnsafeSysctls: [net.core.somaxconn]
rotateCertificates: true
`,
	} {
		t.Run(name, func(t *testing.T) {
			fs, _, err := loadConfig(t, body)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := effectiveKubeletConfiguration(fs)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Kind != "KubeletConfiguration" || cfg.APIVersion != "kubelet.config.k8s.io/v1beta1" {
				t.Errorf("kind/apiVersion = %q/%q", cfg.Kind, cfg.APIVersion)
			}
			if cfg.Authentication.Webhook.Enabled == nil || !*cfg.Authentication.Webhook.Enabled || cfg.Authorization.Webhook.CacheAuthorizedTTL.Duration.String() != "5m0s" {
				t.Errorf("webhook settings: %+v %+v", cfg.Authentication.Webhook, cfg.Authorization.Webhook)
			}
			js, err := json.Marshal(cfg)
			if err != nil {
				t.Fatal(err)
			}
			fs2, warning, err := loadConfig(t, string(mustYAML(t, js)))
			if err != nil {
				t.Fatalf("/configz read back as --config: %v\n%s", err, js)
			}
			if warning != "" {
				t.Errorf("/configz names a field minikubelet does not implement: %s", warning)
			}
			fs.VisitAll(func(f *flag.Flag) {
				// Maps come back sorted by key: compare as sets.
				if got := fs2.Lookup(f.Name).Value.String(); sortedList(got) != sortedList(f.Value.String()) && f.Name != "config" {
					t.Errorf("--%s: %q in effect, %q after reading /configz back", f.Name, f.Value, got)
				}
			})
		})
	}
	// The fields of a file, by name.
	fs, _, err := loadConfig(t, kcHeader+"authorization:\n  mode: AlwaysAllow\nreadOnlyPort: 10255\nevictionHard:\n  memory.available: 200Mi\nclusterDNS: [10.96.0.10]\n")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := effectiveKubeletConfiguration(fs)
	if err != nil {
		t.Fatal(err)
	}
	want := kubeletv1beta1.KubeletConfiguration{}
	want.Authorization.Mode = "AlwaysAllow"
	if cfg.Authorization.Mode != want.Authorization.Mode || cfg.ReadOnlyPort != 10255 || cfg.HealthzPort == nil || *cfg.HealthzPort != 10248 ||
		cfg.EvictionHard["memory.available"] != "200Mi" || strings.Join(cfg.ClusterDNS, ",") != "10.96.0.10" || cfg.StaticPodPath != "/etc/minikubelet/manifests" {
		t.Errorf("configz: mode %q readOnlyPort %d healthzPort %v evictionHard %v clusterDNS %v staticPodPath %q",
			cfg.Authorization.Mode, cfg.ReadOnlyPort, cfg.HealthzPort, cfg.EvictionHard, cfg.ClusterDNS, cfg.StaticPodPath)
	}
}

func mustYAML(t *testing.T, js []byte) []byte {
	t.Helper()
	y, err := yaml.JSONToYAML(js)
	if err != nil {
		t.Fatal(err)
	}
	return y
}

// sortedList is a comma-separated list with its items sorted.
func sortedList(s string) string {
	items := strings.Split(s, ",")
	sort.Strings(items)
	return strings.Join(items, ",")
}
