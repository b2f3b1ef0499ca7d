package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// serveFlagSet is serve's flag set as serveCommand builds it (the flags
// --config maps onto).
func serveFlagSet(t *testing.T) (*flag.FlagSet, *kubeadmAliases) {
	t.Helper()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var nf nodeFlags
	nf.register(fs)
	var gf gcFlags
	gf.register(fs)
	var ef evictFlags
	ef.register(fs)
	var cf clusterFlags
	cf.register(fs)
	var kf kubeletServerFlags
	kf.register(fs)
	ka := &kubeadmAliases{}
	ka.register(fs)
	var sf serveFlags
	fs.StringVar(&sf.config, "config", "", "")
	fs.StringVar(&sf.manifestDir, "manifest-dir", "/etc/minikubelet/manifests", "")
	fs.StringVar(&sf.logMaxSize, "container-log-max-size", "10Mi", "")
	fs.IntVar(&sf.logMaxFiles, "container-log-max-files", 5, "")
	return fs, ka
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubelet.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// loadConfig parses args, then applies the file as serveCommand does.
func loadConfig(t *testing.T, body string, args ...string) (*flag.FlagSet, string, error) {
	t.Helper()
	fs, _ := serveFlagSet(t)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	warning, err := applyConfigFile(fs, writeConfig(t, body))
	return fs, warning, err
}

func flagValue(t *testing.T, fs *flag.FlagSet, name string) string {
	t.Helper()
	f := fs.Lookup(name)
	if f == nil {
		t.Fatalf("no flag --%s", name)
	}
	return f.Value.String()
}

const kcHeader = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"

func TestKubeletConfigurationMapping(t *testing.T) {
	body := kcHeader + `
address: 10.0.0.5
port: 10260
tlsCertFile: /etc/kubelet/tls.crt
tlsPrivateKeyFile: /etc/kubelet/tls.key
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
    cacheTTL: 0s
  x509:
    clientCAFile: /etc/kubernetes/pki/ca.crt
authorization:
  mode: Webhook
  webhook:
    cacheAuthorizedTTL: 0s
staticPodPath: /etc/kubernetes/manifests
podLogsDir: /var/log/kpods
cgroupDriver: systemd
cgroupsPerQOS: false
clusterDomain: example.org
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
runtimeRequestTimeout: 4m
imageGCHighThresholdPercent: 90
imageGCLowThresholdPercent: 70
imageMinimumGCAge: 5m
imageMaximumGCAge: 72h
evictionHard:
  nodefs.available: 5%
  memory.available: 200Mi
evictionSoft:
  memory.available: 500Mi
evictionSoftGracePeriod:
  memory.available: 1m30s
evictionMinimumReclaim:
  nodefs.available: 500Mi
evictionPressureTransitionPeriod: 30s
evictionMaxPodGracePeriod: 60
podPidsLimit: 4096
kubeReserved:
  cpu: 100m
  memory: 256Mi
systemReserved:
  memory: 128Mi
allowedUnsafeSysctls: [net.core.somaxconn, "kernel.msg*"]
containerLogMaxSize: 20Mi
containerLogMaxFiles: 3
resolvConf: /etc/resolv.conf
enableServer: true
logging:
  flushFrequency: 0
  verbosity: 0
`
	fs, warning, err := loadConfig(t, body)
	if err != nil {
		t.Fatal(err)
	}
	if warning != "" {
		t.Errorf("warning for a file of implemented fields and matching defaults: %q", warning)
	}
	want := map[string]string{
		"address":                             "10.0.0.5",
		"port":                                "10260",
		"tls-cert-file":                       "/etc/kubelet/tls.crt",
		"tls-private-key-file":                "/etc/kubelet/tls.key",
		"client-ca-file":                      "/etc/kubernetes/pki/ca.crt",
		"manifest-dir":                        "/etc/kubernetes/manifests",
		"pod-log-dir":                         "/var/log/kpods",
		"cgroup-driver":                       "systemd",
		"cgroups-per-qos":                     "false",
		"cluster-domain":                      "example.org",
		"runtime-endpoint":                    "unix:///run/containerd/containerd.sock",
		"runtime-request-timeout":             "4m0s",
		"image-gc-high-threshold":             "90",
		"image-gc-low-threshold":              "70",
		"image-minimum-gc-age":                "5m0s",
		"image-maximum-gc-age":                "72h0m0s",
		"eviction-hard":                       "memory.available<200Mi,nodefs.available<5%",
		"eviction-soft":                       "memory.available<500Mi",
		"eviction-soft-grace-period":          "memory.available=1m30s",
		"eviction-minimum-reclaim":            "nodefs.available=500Mi",
		"eviction-pressure-transition-period": "30s",
		"eviction-max-pod-grace-period":       "60",
		"pod-max-pids":                        "4096",
		"kube-reserved":                       "cpu=100m,memory=256Mi",
		"system-reserved":                     "memory=128Mi",
		"allowed-unsafe-sysctls":              "net.core.somaxconn,kernel.msg*",
		"container-log-max-size":              "20Mi",
		"container-log-max-files":             "3",
	}
	for name, v := range want {
		if got := flagValue(t, fs, name); got != v {
			t.Errorf("--%s = %q, want %q", name, got, v)
		}
	}
}

// kubeadm's config.yaml writes zero values ("0s", 0) the kubelet defaults,
// plus fields minikubelet does not implement: those are named, once.
func TestKubeletConfigurationWarnsUnimplementedAndUnknown(t *testing.T) {
	body := kcHeader + `
authentication:
  webhook:
    cacheTTL: 2m
authorization:
  mode: AlwaysAllow
cpuManagerReconcilePeriod: 0s
fileCheckFrequency: 0s
healthzBindAddress: 127.0.0.1
healthzPort: 10248
maxPods: 50
rotateCertificates: true
serverTLSBootstrap: true
resolvConf: /run/systemd/resolve/resolv.conf
memorySwap: {}
cgroupDriver: systemd
logging:
  verbosity: 4
nodeStatusUpdateFrequency: 0s
fooBar: 1
authentication2: {}
`
	fs, warning, err := loadConfig(t, body)
	if err != nil {
		t.Fatal(err)
	}
	if got := flagValue(t, fs, "cgroup-driver"); got != "systemd" {
		t.Errorf("--cgroup-driver = %q, want systemd", got)
	}
	if got := flagValue(t, fs, "rotate-certificates"); got != "true" {
		t.Errorf("--rotate-certificates = %q, want rotateCertificates' true", got)
	}
	if got := flagValue(t, fs, "rotate-server-certificates"); got != "true" {
		t.Errorf("--rotate-server-certificates = %q, want serverTLSBootstrap's true", got)
	}
	if got := flagValue(t, fs, "resolv-conf"); got != "/run/systemd/resolve/resolv.conf" {
		t.Errorf("--resolv-conf = %q, want kubeadm's systemd-resolved file", got)
	}
	// maxPods is implemented since serve has --max-pods.
	if got := flagValue(t, fs, "max-pods"); got != "50" {
		t.Errorf("--max-pods = %q, want maxPods' 50", got)
	}
	notImpl := []string{"authentication.webhook.cacheTTL", "logging.verbosity"}
	want := "not implemented, ignored: " + strings.Join(notImpl, ", ") +
		"; unknown to kubelet.config.k8s.io/v1beta1, ignored: authentication2, fooBar"
	if warning != want {
		t.Errorf("warning\n got %q\nwant %q", warning, want)
	}
	for _, zero := range []string{"cpuManagerReconcilePeriod", "fileCheckFrequency", "memorySwap", "nodeStatusUpdateFrequency", "cgroupDriver"} {
		if strings.Contains(warning, zero) {
			t.Errorf("warning names %s, which is unset or implemented", zero)
		}
	}
}

// A flag that another change registers (cluster-dns) is mapped as soon as
// serve has it; until then the field is named in the warning.
func TestKubeletConfigurationOptionalFlag(t *testing.T) {
	body := kcHeader + "clusterDNS: [10.96.0.10, fd00::a]\n"
	_, warning, err := loadConfig(t, body)
	if err != nil {
		t.Fatal(err)
	}
	fs, _ := serveFlagSet(t)
	if fs.Lookup("cluster-dns") == nil {
		if !strings.Contains(warning, "clusterDNS") {
			t.Errorf("clusterDNS without --cluster-dns not warned: %q", warning)
		}
	}
	fs = flag.NewFlagSet("x", flag.ContinueOnError)
	dns := fs.String("cluster-dns", "", "")
	if _, err := applyKubeletConfiguration(fs, []byte(body)); err != nil {
		t.Fatal(err)
	}
	if *dns != "10.96.0.10,fd00::a" {
		t.Errorf("--cluster-dns = %q", *dns)
	}
}

func TestKubeletConfigurationInvalidValueNamesField(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"evictionHard:\n  memory.available: lots\n", `evictionHard["memory.available"]: invalid threshold "lots"`},
		{"evictionHard:\n  bogus.signal: 10%\n", `evictionHard["bogus.signal"]: invalid threshold`},
		{"kubeReserved:\n  memory: 12 apples\n", `kubeReserved["memory"]: invalid quantity "12 apples"`},
		{"port: ten\n", "port"},
		{"runtimeRequestTimeout: soon\n", "runtimeRequestTimeout"},
		{"cgroupsPerQOS: maybe\n", "cgroupsPerQOS"},
		{"authentication:\n  webhook:\n    cacheTTL: soon\n", "authentication.webhook.cacheTTL: invalid value"},
		{"allowedUnsafeSysctls: net.core.somaxconn\n", "allowedUnsafeSysctls: invalid value"},
	} {
		_, _, err := loadConfig(t, kcHeader+tc.body)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--config ") {
			t.Errorf("%q: err = %v, want it to contain %q", tc.body, err, tc.want)
		}
	}
	_, _, err := loadConfig(t, "apiVersion: kubelet.config.k8s.io/v1alpha9\nkind: KubeletConfiguration\n")
	if err == nil || !strings.Contains(err.Error(), "apiVersion") {
		t.Errorf("unsupported apiVersion: err = %v", err)
	}
}

func TestKubeletConfigurationCommandLineWins(t *testing.T) {
	body := kcHeader + "port: 10260\nstaticPodPath: /etc/kubernetes/manifests\ncontainerRuntimeEndpoint: unix:///from/file.sock\ncgroupDriver: systemd\n"
	fs, _, err := loadConfig(t, body, "--port=10999", "--container-runtime-endpoint=unix:///from/flag.sock")
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]string{
		"port":             "10999",
		"runtime-endpoint": "unix:///from/flag.sock",
		"manifest-dir":     "/etc/kubernetes/manifests",
		"cgroup-driver":    "systemd",
	} {
		if got := flagValue(t, fs, name); got != v {
			t.Errorf("--%s = %q, want %q", name, got, v)
		}
	}
}

// The flag-name format of --config still works, and its unknown keys are
// still errors.
func TestConfigFileFlagNames(t *testing.T) {
	fs, warning, err := loadConfig(t, "pod-cidr: 10.77.0.0/16\nport: 10270\n", "--port=10999")
	if err != nil || warning != "" {
		t.Fatalf("err %v, warning %q", err, warning)
	}
	if got := flagValue(t, fs, "pod-cidr"); got != "10.77.0.0/16" {
		t.Errorf("--pod-cidr = %q", got)
	}
	if got := flagValue(t, fs, "port"); got != "10999" {
		t.Errorf("--port = %q, the command line should win", got)
	}
	if _, _, err := loadConfig(t, "staticPodPath: /x\n"); err == nil || !strings.Contains(err.Error(), `unknown setting "staticPodPath"`) {
		t.Errorf("a KubeletConfiguration field without apiVersion/kind: err = %v", err)
	}
}

func TestKubeadmFlagAliases(t *testing.T) {
	fs, ka := serveFlagSet(t)
	args := []string{
		"--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock",
		"--hostname-override=worker-1",
		"--node-ip=192.0.2.7",
		"--pod-infra-container-image=registry.k8s.io/pause:3.10",
		"--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf",
		"--kubeconfig=/etc/kubernetes/kubelet.conf",
	}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]string{
		"runtime-endpoint": "unix:///var/run/containerd/containerd.sock",
		"node-name":        "worker-1",
		"node-ip":          "192.0.2.7",
		"kubeconfig":       "/etc/kubernetes/kubelet.conf",
		// kubeadm-flags.env's TLS bootstrapping flag is implemented.
		"bootstrap-kubeconfig": "/etc/kubernetes/bootstrap-kubelet.conf",
	} {
		if got := flagValue(t, fs, name); got != v {
			t.Errorf("--%s = %q, want %q", name, got, v)
		}
	}
	if !flagGiven(fs, "runtime-endpoint") {
		t.Error("an alias does not count as the flag given (a --config file would override it)")
	}
	joined := strings.Join(ka.notices, "\n")
	for name, want := range map[string]string{
		"pod-infra-container-image": "--pod-infra-container-image=registry.k8s.io/pause:3.10 is not used: the runtime's sandbox image",
	} {
		if !strings.HasPrefix(fs.Lookup(name).Usage, "accepted") {
			continue // implemented by a flag of its own
		}
		if !strings.Contains(joined, want) {
			t.Errorf("notices %q lack %q", joined, want)
		}
	}
}
