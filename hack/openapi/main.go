// Command openapi writes the OpenAPI v3 document the local API serves for
// api/v1 (agent/api/openapi/api_v1.json.gz): the kube-apiserver's own
// document at the pinned Kubernetes release (api/openapi-spec/v3 of
// k8s.io/kubernetes, the module hack/cluster builds the control plane
// from), pruned to the paths and methods the node serves and the schemas
// they reference, so that kubectl explain shows the API server's
// descriptions and nothing the node does not serve.
//
//	go run ./hack/openapi            # regenerate
//	go run ./hack/openapi -check     # fail if the embedded file differs
//
// TestGenerated (main_test.go) runs the check, downloading the Kubernetes
// module through the module proxy when the module cache lacks it.
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// served maps each path the local API serves (agent/api/server.go routes)
// to its methods.
var served = map[string][]string{
	"/api/v1/pods":                                           {"get"},
	"/api/v1/namespaces/{namespace}/pods":                    {"get", "post"},
	"/api/v1/namespaces/{namespace}/pods/{name}":             {"get", "delete", "patch"},
	"/api/v1/namespaces/{namespace}/pods/{name}/log":         {"get"},
	"/api/v1/namespaces/{namespace}/pods/{name}/exec":        {"get", "post"},
	"/api/v1/namespaces/{namespace}/pods/{name}/attach":      {"get", "post"},
	"/api/v1/namespaces/{namespace}/pods/{name}/portforward": {"get", "post"},
	"/api/v1/namespaces/{namespace}/pods/{name}/status":      {"get"},
	"/api/v1/configmaps":                                     {"get"},
	"/api/v1/namespaces/{namespace}/configmaps":              {"get", "post"},
	"/api/v1/namespaces/{namespace}/configmaps/{name}":       {"get", "delete", "patch"},
	"/api/v1/secrets":                                        {"get"},
	"/api/v1/namespaces/{namespace}/secrets":                 {"get", "post"},
	"/api/v1/namespaces/{namespace}/secrets/{name}":          {"get", "delete", "patch"},
	"/api/v1/events":                                         {"get"},
	"/api/v1/namespaces/{namespace}/events":                  {"get"},
	"/api/v1/namespaces":                                     {"get"},
	"/api/v1/namespaces/{name}":                              {"get"},
	"/api/v1/nodes":                                          {"get"},
	"/api/v1/nodes/{name}":                                   {"get"},
}

// outFile is the embedded document, relative to the repository root.
const outFile = "agent/api/openapi/api_v1.json.gz"

func main() {
	check := flag.Bool("check", false, "compare with the embedded document instead of writing it")
	src := flag.String("src", "", "api__v1_openapi.json of the pinned kube-apiserver (default: from the k8s.io/kubernetes module of hack/cluster)")
	flag.Parse()
	if err := run(*src, *check); err != nil {
		fmt.Fprintln(os.Stderr, "openapi:", err)
		os.Exit(1)
	}
}

// repoRoot is the directory holding go.mod of this repository.
func repoRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out))), nil
}

// errModuleUnavailable wraps a failure to get the k8s.io/kubernetes module
// (no module proxy, no cache): the check cannot run.
var errModuleUnavailable = errors.New("the pinned Kubernetes module is not available")

// sourcePath finds the pinned release's document: the k8s.io/kubernetes
// module of hack/cluster/go.mod, downloaded through the module proxy when
// the module cache does not have it yet (go mod download is a no-op then;
// cold, about 22 MB), so the check runs on a fresh machine too, before
// hack/cluster/build.sh has fetched it.
func sourcePath(root string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", "k8s.io/kubernetes")
	cmd.Dir = filepath.Join(root, "hack", "cluster")
	out, err := cmd.Output()
	var mod struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &mod); jerr == nil && mod.Error != "" {
		err = errors.New(mod.Error)
	} else if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && len(ee.Stderr) > 0 {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
	}
	if err == nil && mod.Dir == "" {
		err = errors.New("go mod download named no directory")
	}
	if err != nil {
		return "", fmt.Errorf("%w: go mod download k8s.io/kubernetes in hack/cluster: %w (check that the Go module proxy is reachable: go env GOPROXY; or pass -src)", errModuleUnavailable, err)
	}
	return filepath.Join(mod.Dir, "api", "openapi-spec", "v3", "api__v1_openapi.json"), nil
}

func run(src string, check bool) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	if src == "" {
		if src, err = sourcePath(root); err != nil {
			return err
		}
	}
	raw, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	doc, err := prune(raw)
	if err != nil {
		return err
	}
	gz, err := compress(doc)
	if err != nil {
		return err
	}
	out := filepath.Join(root, outFile)
	if check {
		have, err := os.ReadFile(out)
		if err != nil {
			return err
		}
		if !bytes.Equal(have, gz) {
			return fmt.Errorf("%s is not what %s gives: run go run ./hack/openapi", outFile, src)
		}
		return nil
	}
	return os.WriteFile(out, gz, 0o644)
}

// prune keeps the served paths and methods and the schemas they reach.
func prune(raw []byte) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("decode the source document: %w", err)
	}
	paths, _ := doc["paths"].(map[string]any)
	keptPaths := map[string]any{}
	for p, methods := range served {
		item, ok := paths[p].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("the source document has no path %s", p)
		}
		kept := map[string]any{}
		if params, ok := item["parameters"]; ok {
			kept["parameters"] = params
		}
		for _, m := range methods {
			op, ok := item[m]
			if !ok {
				return nil, fmt.Errorf("the source document has no %s %s", strings.ToUpper(m), p)
			}
			kept[m] = op
		}
		keptPaths[p] = kept
	}
	schemas, _ := doc["components"].(map[string]any)["schemas"].(map[string]any)
	keptSchemas := map[string]any{}
	var walk func(v any) error
	walk = func(v any) error {
		switch t := v.(type) {
		case map[string]any:
			if ref, ok := t["$ref"].(string); ok {
				name, ok := strings.CutPrefix(ref, "#/components/schemas/")
				if !ok {
					return fmt.Errorf("unexpected $ref %q", ref)
				}
				if _, done := keptSchemas[name]; !done {
					s, ok := schemas[name]
					if !ok {
						return fmt.Errorf("$ref to a missing schema %q", name)
					}
					keptSchemas[name] = s
					if err := walk(s); err != nil {
						return err
					}
				}
			}
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if err := walk(t[k]); err != nil {
					return err
				}
			}
		case []any:
			for _, e := range t {
				if err := walk(e); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(keptPaths); err != nil {
		return nil, err
	}
	out := map[string]any{
		"openapi":    doc["openapi"],
		"info":       doc["info"],
		"paths":      keptPaths,
		"components": map[string]any{"schemas": keptSchemas},
	}
	return json.Marshal(out) // sorted keys: deterministic
}

// compress gzips deterministically (no name, no time).
func compress(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
