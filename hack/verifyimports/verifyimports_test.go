package verifyimports

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const mod = "github.com/minikubelet/minikubelet"

// tree is a throw-away module: path → Go source. Each package is one file.
type tree map[string]string

// cleanTree has every package the rules name, importing only what the
// rules allow: the engine imports eviction, eviction/hoststats,
// logrotate, manifest, podspec, resize, source and volume; logrotate
// imports cri; resize imports manifest, node, podspec and safepath;
// eviction imports podspec and source; eviction/hoststats imports
// eviction, node, podspec, volume, safepath and the cgroups leaf; node
// imports eviction, manifest and podspec; the daemon imports the engine
// and node (and
// nothing else of agent/ imports it);
// podspec imports manifest; source imports volume and manifest, volume
// imports manifest; manifest imports its own subpackage.
func cleanTree() tree {
	return tree{
		"cmd/minikubelet/main.go":       "package main\n\nimport _ \"" + mod + "/agent\"\n\nfunc main() {}\n",
		"agent/agent.go":                "package agent\n\nimport (\n\t_ \"" + mod + "/agent/eviction\"\n\t_ \"" + mod + "/agent/eviction/hoststats\"\n\t_ \"" + mod + "/agent/logrotate\"\n\t_ \"" + mod + "/agent/manifest\"\n\t_ \"" + mod + "/agent/podspec\"\n\t_ \"" + mod + "/agent/resize\"\n\t_ \"" + mod + "/agent/source\"\n\t_ \"" + mod + "/agent/volume\"\n)\n",
		"agent/podspec/podspec.go":      "package podspec\n\nimport (\n\t_ \"" + mod + "/agent/manifest\"\n\t_ \"strings\"\n)\n",
		"agent/manifest/manifest.go":    "package manifest\n\nimport _ \"" + mod + "/agent/manifest/decodeerr\"\n",
		"agent/manifest/decodeerr/d.go": "package decodeerr\n",
		"agent/source/source.go":        "package source\n\nimport (\n\t_ \"" + mod + "/agent/manifest\"\n\t_ \"" + mod + "/agent/volume\"\n)\n",
		"agent/volume/volume.go":        "package volume\n\nimport _ \"" + mod + "/agent/manifest\"\n",
		"agent/api/api.go":              "package api\n",
		"agent/cluster/cluster.go":      "package cluster\n",
		"cgroups/cgroups.go":            "package cgroups\n",
		"agent/node/node.go":            "package node\n\nimport (\n\t_ \"" + mod + "/agent/eviction\"\n\t_ \"" + mod + "/agent/manifest\"\n\t_ \"" + mod + "/agent/podspec\"\n)\n",
		"agent/daemon/daemon.go":        "package daemon\n\nimport (\n\t_ \"" + mod + "/agent\"\n\t_ \"" + mod + "/agent/node\"\n)\n",
		"agent/eviction/eviction.go":    "package eviction\n\nimport (\n\t_ \"" + mod + "/agent/podspec\"\n\t_ \"" + mod + "/agent/source\"\n)\n",
		"agent/safepath/safepath.go":    "package safepath\n",
		"agent/eviction/hoststats/h.go": "package hoststats\n\nimport (\n\t_ \"" + mod + "/agent/eviction\"\n\t_ \"" + mod + "/agent/node\"\n\t_ \"" + mod + "/agent/podspec\"\n\t_ \"" + mod + "/agent/safepath\"\n\t_ \"" + mod + "/agent/volume\"\n\t_ \"" + mod + "/cgroups\"\n)\n",
		"agent/logrotate/logrotate.go":  "package logrotate\n\nimport _ \"" + mod + "/cri\"\n",
		"agent/resize/resize.go":        "package resize\n\nimport (\n\t_ \"" + mod + "/agent/manifest\"\n\t_ \"" + mod + "/agent/node\"\n\t_ \"" + mod + "/agent/podspec\"\n\t_ \"" + mod + "/agent/safepath\"\n)\n",
		"test/testutil/testutil.go":     "package testutil\n",
		"cri/cri.go":                    "package cri\n",
	}
}

// run writes t into a temporary module and runs verify-imports.sh on it.
func run(t *testing.T, files tree) (string, error) {
	t.Helper()
	root := t.TempDir()
	files["go.mod"] = "module " + mod + "\n\ngo 1.26\n"
	for p, src := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script, err := filepath.Abs("../verify-imports.sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", script, root)
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestVerifyImports_CleanTreePasses(t *testing.T) {
	out, err := run(t, cleanTree())
	if err != nil || !strings.Contains(out, "imports OK") {
		t.Fatalf("a tree that keeps the rules was refused (%v):\n%s", err, out)
	}
}

func TestVerifyImports_RefusesForbiddenImports(t *testing.T) {
	imp := func(pkg, path string) string {
		return "package " + pkg + "\n\nimport _ \"" + mod + "/" + path + "\"\n"
	}
	for name, tc := range map[string]struct {
		file, src string
		want      string // the rule's package named in the failure
	}{
		"manifest imports the engine":          {"agent/manifest/bad.go", imp("manifest", "agent"), "agent/manifest must not import"},
		"manifest imports source":              {"agent/manifest/bad.go", imp("manifest", "agent/source"), "agent/manifest must not import"},
		"manifest imports volume":              {"agent/manifest/bad.go", imp("manifest", "agent/volume"), "agent/manifest must not import"},
		"manifest imports a leaf":              {"agent/manifest/bad.go", imp("manifest", "cri"), "agent/manifest must not import"},
		"manifest's test imports agent":        {"agent/manifest/bad_test.go", imp("manifest_test", "agent"), "agent/manifest must not import"},
		"volume imports the engine":            {"agent/volume/bad.go", imp("volume", "agent"), "agent/volume must not import"},
		"volume imports source":                {"agent/volume/bad.go", imp("volume", "agent/source"), "agent/volume must not import"},
		"source imports the engine":            {"agent/source/bad.go", imp("source", "agent"), "agent/source must not import"},
		"source imports the API":               {"agent/source/bad.go", imp("source", "agent/api"), "agent/source must not import"},
		"source imports a runtime leaf":        {"agent/source/bad.go", imp("source", "cri"), "agent/source must not import"},
		"agent imports cmd":                    {"agent/bad.go", imp("agent", "cmd/minikubelet"), "agent must not import"},
		"a package under agent imports test":   {"agent/volume/bad.go", imp("volume", "test/testutil"), "must not import"},
		"podspec imports the engine":           {"agent/podspec/bad.go", imp("podspec", "agent"), "agent/podspec must not import"},
		"podspec imports the CRI client":       {"agent/podspec/bad.go", imp("podspec", "cri"), "agent/podspec must not import"},
		"podspec imports volume":               {"agent/podspec/bad.go", imp("podspec", "agent/volume"), "agent/podspec must not import"},
		"podspec imports safepath":             {"agent/podspec/bad.go", imp("podspec", "agent/safepath"), "agent/podspec must not import"},
		"podspec reads files":                  {"agent/podspec/bad.go", "package podspec\n\nimport _ \"os\"\n", "agent/podspec must not import"},
		"podspec's test imports the engine":    {"agent/podspec/bad_test.go", imp("podspec_test", "agent"), "agent/podspec must not import"},
		"eviction imports the engine":          {"agent/eviction/bad.go", imp("eviction", "agent"), "agent/eviction must not import"},
		"eviction imports the CRI client":      {"agent/eviction/bad.go", imp("eviction", "cri"), "agent/eviction must not import"},
		"eviction's test imports the engine":   {"agent/eviction/bad_test.go", imp("eviction_test", "agent"), "agent/eviction must not import"},
		"eviction imports the daemon":          {"agent/eviction/bad.go", imp("eviction", "agent/daemon"), "agent/eviction must not import"},
		"eviction imports its host stats":      {"agent/eviction/bad.go", imp("eviction", "agent/eviction/hoststats"), "agent/eviction must not import"},
		"eviction imports a runtime leaf":      {"agent/eviction/bad.go", imp("eviction", "cgroups"), "agent/eviction must not import"},
		"hoststats imports the engine":         {"agent/eviction/hoststats/bad.go", imp("hoststats", "agent"), "agent/eviction/hoststats must not import"},
		"hoststats imports the CRI client":     {"agent/eviction/hoststats/bad.go", imp("hoststats", "cri"), "agent/eviction/hoststats must not import"},
		"hoststats imports the daemon":         {"agent/eviction/hoststats/bad.go", imp("hoststats", "agent/daemon"), "agent/eviction/hoststats must not import"},
		"hoststats imports the API":            {"agent/eviction/hoststats/bad.go", imp("hoststats", "agent/api"), "agent/eviction/hoststats must not import"},
		"hoststats's test imports the engine":  {"agent/eviction/hoststats/bad_test.go", imp("hoststats_test", "agent"), "agent/eviction/hoststats must not import"},
		"node imports the engine":              {"agent/node/bad.go", imp("node", "agent"), "agent/node must not import"},
		"node imports the daemon":              {"agent/node/bad.go", imp("node", "agent/daemon"), "agent/node must not import"},
		"node imports the CRI client":          {"agent/node/bad.go", imp("node", "cri"), "agent/node must not import"},
		"node's test imports the engine":       {"agent/node/bad_test.go", imp("node_test", "agent"), "agent/node must not import"},
		"the engine imports the daemon":        {"agent/bad.go", imp("agent", "agent/daemon"), "agent must not import"},
		"the engine's test imports the daemon": {"agent/bad_test.go", imp("agent_test", "agent/daemon"), "agent must not import"},
		"the local API imports the daemon":     {"agent/api/bad.go", imp("api", "agent/daemon"), "agent/api must not import"},
		"source's test imports the daemon":     {"agent/source/bad_test.go", imp("source_test", "agent/daemon"), "agent/source must not import"},
		"the daemon imports the cluster":       {"agent/daemon/bad.go", imp("daemon", "agent/cluster"), "agent/daemon must not import"},
		"the daemon imports a runtime leaf":    {"agent/daemon/bad.go", imp("daemon", "cgroups"), "agent/daemon must not import"},
		"resize imports the engine":            {"agent/resize/bad.go", imp("resize", "agent"), "agent/resize must not import"},
		"resize imports the CRI client":        {"agent/resize/bad.go", imp("resize", "cri"), "agent/resize must not import"},
		"resize imports cgroups":               {"agent/resize/bad.go", imp("resize", "cgroups"), "agent/resize must not import"},
		"resize imports the daemon":            {"agent/resize/bad.go", imp("resize", "agent/daemon"), "agent/resize must not import"},
		"resize imports eviction":              {"agent/resize/bad.go", imp("resize", "agent/eviction"), "agent/resize must not import"},
		"resize's test imports the engine":     {"agent/resize/bad_test.go", imp("resize_test", "agent"), "agent/resize must not import"},
		"logrotate imports the engine":         {"agent/logrotate/bad.go", imp("logrotate", "agent"), "agent/logrotate must not import"},
		"logrotate imports cgroups":            {"agent/logrotate/bad.go", imp("logrotate", "cgroups"), "agent/logrotate must not import"},
		"logrotate's test imports the engine":  {"agent/logrotate/bad_test.go", imp("logrotate_test", "agent"), "agent/logrotate must not import"},
		"safepath imports manifest":            {"agent/safepath/bad.go", imp("safepath", "agent/manifest"), "agent/safepath must not import"},
		// agent/deviceplugin (issue #26): agent/safepath only.
		"deviceplugin imports the engine":        {"agent/deviceplugin/bad.go", imp("deviceplugin", "agent"), "agent/deviceplugin must not import"},
		"deviceplugin imports the daemon":        {"agent/deviceplugin/bad.go", imp("deviceplugin", "agent/daemon"), "agent/deviceplugin must not import"},
		"deviceplugin imports the CRI client":    {"agent/deviceplugin/bad.go", imp("deviceplugin", "cri"), "agent/deviceplugin must not import"},
		"deviceplugin's test imports the engine": {"agent/deviceplugin/bad_test.go", imp("deviceplugin_test", "agent"), "agent/deviceplugin must not import"},
		// agent/backoff, agent/fingerprint (issue #27): nothing of the repository.
		"backoff imports the engine":                {"agent/backoff/bad.go", imp("backoff", "agent"), "agent/backoff must not import"},
		"fingerprint imports the engine":            {"agent/fingerprint/bad.go", imp("fingerprint", "agent"), "agent/fingerprint must not import"},
		"fingerprint's test imports the CRI client": {"agent/fingerprint/bad_test.go", imp("fingerprint_test", "cri"), "agent/fingerprint must not import"},
		"stopgate imports the engine":               {"agent/stopgate/bad.go", imp("stopgate", "agent"), "agent/stopgate must not import"},
		"stopgate's test imports the CRI client":    {"agent/stopgate/bad_test.go", imp("stopgate_test", "cri"), "agent/stopgate must not import"},
		// agent/reason (issue #30): nothing of the repository.
		"reason imports the engine":        {"agent/reason/bad.go", imp("reason", "agent"), "agent/reason must not import"},
		"reason imports the CRI client":    {"agent/reason/bad.go", imp("reason", "cri"), "agent/reason must not import"},
		"reason imports manifest":          {"agent/reason/bad.go", imp("reason", "agent/manifest"), "agent/reason must not import"},
		"reason's test imports the engine": {"agent/reason/bad_test.go", imp("reason_test", "agent"), "agent/reason must not import"},
		// agent/ipamrepair (the cni leaf only) and agent/metrics (nothing
		// of the repository), issue #30.
		"ipamrepair imports the engine":         {"agent/ipamrepair/bad.go", imp("ipamrepair", "agent"), "agent/ipamrepair must not import"},
		"ipamrepair imports the daemon":         {"agent/ipamrepair/bad.go", imp("ipamrepair", "agent/daemon"), "agent/ipamrepair must not import"},
		"ipamrepair imports the CRI client":     {"agent/ipamrepair/bad.go", imp("ipamrepair", "cri"), "agent/ipamrepair must not import"},
		"ipamrepair imports cgroups":            {"agent/ipamrepair/bad.go", imp("ipamrepair", "cgroups"), "agent/ipamrepair must not import"},
		"ipamrepair's test imports the engine":  {"agent/ipamrepair/bad_test.go", imp("ipamrepair_test", "agent"), "agent/ipamrepair must not import"},
		"ipamrepair's test imports cri/critest": {"agent/ipamrepair/bad_test.go", imp("ipamrepair_test", "cri/critest"), "agent/ipamrepair must not import"},
		"metrics imports the engine":            {"agent/metrics/bad.go", imp("metrics", "agent"), "agent/metrics must not import"},
		"metrics imports the daemon":            {"agent/metrics/bad.go", imp("metrics", "agent/daemon"), "agent/metrics must not import"},
		"metrics imports the CRI client":        {"agent/metrics/bad.go", imp("metrics", "cri"), "agent/metrics must not import"},
		"metrics's test imports the engine":     {"agent/metrics/bad_test.go", imp("metrics_test", "agent"), "agent/metrics must not import"},
		// agent/config: its fields' types only (agent/node, agent/userns, cni).
		"config imports the engine":        {"agent/config/bad.go", imp("config", "agent"), "agent/config must not import"},
		"config imports the daemon":        {"agent/config/bad.go", imp("config", "agent/daemon"), "agent/config must not import"},
		"config imports the CRI client":    {"agent/config/bad.go", imp("config", "cri"), "agent/config must not import"},
		"config imports cgroups":           {"agent/config/bad.go", imp("config", "cgroups"), "agent/config must not import"},
		"config imports probes":            {"agent/config/bad.go", imp("config", "probes"), "agent/config must not import"},
		"config imports volume":            {"agent/config/bad.go", imp("config", "agent/volume"), "agent/config must not import"},
		"config's test imports the engine": {"agent/config/bad_test.go", imp("config_test", "agent"), "agent/config must not import"},
		// agent/podevents (issue #30): agent/manifest at most.
		"podevents imports the engine":        {"agent/podevents/bad.go", imp("podevents", "agent"), "agent/podevents must not import"},
		"podevents imports the daemon":        {"agent/podevents/bad.go", imp("podevents", "agent/daemon"), "agent/podevents must not import"},
		"podevents imports the CRI client":    {"agent/podevents/bad.go", imp("podevents", "cri"), "agent/podevents must not import"},
		"podevents imports cgroups":           {"agent/podevents/bad.go", imp("podevents", "cgroups"), "agent/podevents must not import"},
		"podevents imports volume":            {"agent/podevents/bad.go", imp("podevents", "agent/volume"), "agent/podevents must not import"},
		"podevents's test imports the engine": {"agent/podevents/bad_test.go", imp("podevents_test", "agent"), "agent/podevents must not import"},
		// agent/termmsg and agent/lifecycle (issue #30).
		"termmsg imports the engine":          {"agent/termmsg/bad.go", imp("termmsg", "agent"), "agent/termmsg must not import"},
		"termmsg imports the daemon":          {"agent/termmsg/bad.go", imp("termmsg", "agent/daemon"), "agent/termmsg must not import"},
		"termmsg imports the CRI client":      {"agent/termmsg/bad.go", imp("termmsg", "cri"), "agent/termmsg must not import"},
		"termmsg imports cgroups":             {"agent/termmsg/bad.go", imp("termmsg", "cgroups"), "agent/termmsg must not import"},
		"termmsg's test imports the engine":   {"agent/termmsg/bad_test.go", imp("termmsg_test", "agent"), "agent/termmsg must not import"},
		"lifecycle imports the engine":        {"agent/lifecycle/bad.go", imp("lifecycle", "agent"), "agent/lifecycle must not import"},
		"lifecycle imports the daemon":        {"agent/lifecycle/bad.go", imp("lifecycle", "agent/daemon"), "agent/lifecycle must not import"},
		"lifecycle imports cgroups":           {"agent/lifecycle/bad.go", imp("lifecycle", "cgroups"), "agent/lifecycle must not import"},
		"lifecycle imports podspec":           {"agent/lifecycle/bad.go", imp("lifecycle", "agent/podspec"), "agent/lifecycle must not import"},
		"lifecycle's test imports the engine": {"agent/lifecycle/bad_test.go", imp("lifecycle_test", "agent"), "agent/lifecycle must not import"},
		"podstatus imports the engine":        {"agent/podstatus/bad.go", imp("podstatus", "agent"), "agent/podstatus must not import"},
		"podstatus imports the daemon":        {"agent/podstatus/bad.go", imp("podstatus", "agent/daemon"), "agent/podstatus must not import"},
		"podstatus imports the CRI client":    {"agent/podstatus/bad.go", imp("podstatus", "cri"), "agent/podstatus must not import"},
		"podstatus imports volume":            {"agent/podstatus/bad.go", imp("podstatus", "agent/volume"), "agent/podstatus must not import"},
		"podstatus reads files":               {"agent/podstatus/bad.go", "package podstatus\n\nimport _ \"os\"\n", "agent/podstatus must not import"},
		"podstatus's test imports the engine": {"agent/podstatus/bad_test.go", imp("podstatus_test", "agent"), "agent/podstatus must not import"},
		"images imports the engine":           {"agent/images/bad.go", imp("images", "agent"), "agent/images must not import"},
		"images imports the daemon":           {"agent/images/bad.go", imp("images", "agent/daemon"), "agent/images must not import"},
		"images imports cgroups":              {"agent/images/bad.go", imp("images", "cgroups"), "agent/images must not import"},
		"images imports the CRI's test fakes": {"agent/images/bad.go", imp("images", "cri/critest"), "agent/images must not import"},
		"images's test imports the engine":    {"agent/images/bad_test.go", imp("images_test", "agent"), "agent/images must not import"},
		// agent/podcgroup: the cgroups leaf, podspec and manifest only.
		"podcgroup imports the engine":        {"agent/podcgroup/bad.go", imp("podcgroup", "agent"), "agent/podcgroup must not import"},
		"podcgroup imports the daemon":        {"agent/podcgroup/bad.go", imp("podcgroup", "agent/daemon"), "agent/podcgroup must not import"},
		"podcgroup imports the CRI client":    {"agent/podcgroup/bad.go", imp("podcgroup", "cri"), "agent/podcgroup must not import"},
		"podcgroup imports source":            {"agent/podcgroup/bad.go", imp("podcgroup", "agent/source"), "agent/podcgroup must not import"},
		"podcgroup's test imports the engine": {"agent/podcgroup/bad_test.go", imp("podcgroup_test", "agent"), "agent/podcgroup must not import"},
	} {
		t.Run(name, func(t *testing.T) {
			// Each case is a module of its own; the script's many go list
			// calls wait on the disk as much as on the CPU, and 40 cases
			// one after the other took 225 s in CI's unit step.
			t.Parallel()
			files := cleanTree()
			files[tc.file] = tc.src
			out, err := run(t, files)
			if err == nil {
				t.Fatalf("verify-imports.sh passed a tree where %s:\n%s", name, out)
			}
			if !strings.Contains(out, tc.want) {
				t.Fatalf("verify-imports.sh failed without naming the rule %q:\n%s", tc.want, out)
			}
		})
	}
}
