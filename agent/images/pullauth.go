package images

// Registry credentials for image pulls, as the kubelet's credential provider
// keyring finds them (pkg/credentialprovider): the pod's imagePullSecrets
// first, then the node's docker config file. Every credential whose registry
// key matches the image is tried in turn until a pull succeeds; with none,
// the image is pulled anonymously.
//
// A key is host[:port][/path] (a scheme and a /v1/ or /v2/ path are
// ignored); it matches an image whose host has as many dot-separated parts,
// each matching the key's (which may hold * globs), the same port, and a
// repository path starting with the key's path. Keys are tried longest
// first. Docker Hub credentials stored under index.docker.io also serve
// docker.io images.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/cri"
)

// dockerHubHost is the key Docker Hub credentials are filed under.
const dockerHubHost = "index.docker.io"

// Credential is one credential of a docker config file.
type Credential struct {
	Username, Password, IdentityToken, RegistryToken string
}

// dockerConfigEntry is one registry's entry of a docker config file.
type dockerConfigEntry struct {
	Auth          string `json:"auth"`
	Username      string `json:"username"`
	Password      string `json:"password"`
	IdentityToken string `json:"identitytoken"`
	RegistryToken string `json:"registrytoken"`
}

// Keyring holds credentials by registry key, in lookup order.
type Keyring struct {
	// keys in the order they are tried: longest (most specific) first,
	// then in the order they were added.
	keys []string
	// creds by key, in the order they were added.
	creds map[string][]Credential
}

// parseDockerConfig reads a docker config file: config.json
// ({"auths": {key: entry}}) or the legacy .dockercfg ({key: entry}).
func parseDockerConfig(data []byte) (map[string]dockerConfigEntry, error) {
	var wrapped struct {
		Auths map[string]dockerConfigEntry `json:"auths"`
	}
	if err := json.Unmarshal(data, &wrapped); err == nil && wrapped.Auths != nil {
		return wrapped.Auths, nil
	}
	var legacy map[string]dockerConfigEntry
	if err := json.Unmarshal(data, &legacy); err != nil {
		return nil, err
	}
	return legacy, nil
}

// credential turns an entry into a credential; "auth" (base64 of
// user:password) wins over username and password, as in docker.
func (e dockerConfigEntry) credential() (Credential, error) {
	c := Credential{Username: e.Username, Password: e.Password, IdentityToken: e.IdentityToken, RegistryToken: e.RegistryToken}
	if e.Auth != "" {
		raw, err := base64.StdEncoding.DecodeString(e.Auth)
		if err != nil {
			return c, fmt.Errorf("auth: %w", err)
		}
		user, pass, ok := strings.Cut(string(raw), ":")
		if !ok {
			return c, errors.New("auth: not base64 of user:password")
		}
		c.Username, c.Password = user, pass
	}
	return c, nil
}

// add files every entry of a docker config under its normalised key.
// Entries that do not decode are skipped and reported.
func (k *Keyring) add(entries map[string]dockerConfigEntry) []error {
	var errs []error
	// Map order is random: add keys sorted so equal-length keys keep a
	// stable order.
	for _, loc := range slices.Sorted(maps.Keys(entries)) {
		cred, err := entries[loc].credential()
		if err != nil {
			errs = append(errs, fmt.Errorf("registry %q: %w", loc, err))
			continue
		}
		key := registryKey(loc)
		if k.creds == nil {
			k.creds = map[string][]Credential{}
		}
		if _, ok := k.creds[key]; !ok {
			k.keys = append(k.keys, key)
		}
		k.creds[key] = append(k.creds[key], cred)
	}
	slices.SortStableFunc(k.keys, func(a, b string) int { return len(b) - len(a) })
	return errs
}

// AddConfig files every entry of a docker config file's content (see
// parseDockerConfig) under its normalised key. Content that does not parse
// is one error; entries that do not decode are skipped and reported.
func (k *Keyring) AddConfig(data []byte) []error {
	entries, err := parseDockerConfig(data)
	if err != nil {
		return []error{err}
	}
	return k.add(entries)
}

// Keyring builds the keyring for a pod: the Secrets its imagePullSecrets
// name (types kubernetes.io/dockerconfigjson and kubernetes.io/dockercfg;
// others are ignored, as by the kubelet), then the node's docker config
// file. It returns the names of the Secrets it could not find and the
// problems met reading the others.
func (m *Manager) Keyring(pod *v1.Pod) (k *Keyring, missing []string, problems []error) {
	k = &Keyring{}
	for _, ref := range pod.Spec.ImagePullSecrets {
		s, err := m.Secret(pod, ref.Name)
		if err != nil {
			missing = append(missing, ref.Name)
			continue
		}
		var data []byte
		switch s.Type {
		case v1.SecretTypeDockerConfigJson:
			data = s.Data[v1.DockerConfigJsonKey]
		case v1.SecretTypeDockercfg:
			data = s.Data[v1.DockerConfigKey]
		}
		if len(data) == 0 {
			continue
		}
		for _, err := range k.AddConfig(data) {
			problems = append(problems, fmt.Errorf("secret %q: %w", ref.Name, err))
		}
	}
	file := m.PullSecretFile
	if file == "" {
		file = filepath.Join(m.RootDir, "config.json")
	}
	data, err := os.ReadFile(file)
	switch {
	case err == nil:
		for _, err := range k.AddConfig(data) {
			problems = append(problems, fmt.Errorf("%s: %w", file, err))
		}
	case !os.IsNotExist(err) || m.PullSecretFile != "":
		problems = append(problems, err)
	}
	return k, missing, problems
}

// registryKey normalises a docker config key: no scheme, no /v1/ or /v2/
// API path, no trailing slash.
func registryKey(loc string) string {
	loc = strings.TrimPrefix(strings.TrimPrefix(loc, "https://"), "http://")
	host, p, _ := strings.Cut(loc, "/")
	p = "/" + p
	if strings.HasPrefix(p, "/v1/") || strings.HasPrefix(p, "/v2/") || p == "/v1" || p == "/v2" {
		p = p[3:]
	}
	p = strings.Trim(p, "/")
	if p == "" {
		return host
	}
	return host + "/" + p
}

// Lookup returns the credentials for an image repository (normalised,
// e.g. docker.io/library/busybox), best match first.
func (k *Keyring) Lookup(repo string) []Credential {
	var out []Credential
	for _, key := range k.keys {
		if registryKeyMatches(key, repo) {
			out = append(out, k.creds[key]...)
		}
	}
	if len(out) == 0 && strings.HasPrefix(repo, "docker.io/") {
		out = append(out, k.creds[dockerHubHost]...)
	}
	return out
}

// registryKeyMatches reports whether key (host[:port][/path], host parts
// may be globs) matches repo (host[:port]/path).
func registryKeyMatches(key, repo string) bool {
	kHost, kPath, _ := strings.Cut(key, "/")
	rHost, rPath, _ := strings.Cut(repo, "/")
	kName, kPort := splitPort(kHost)
	rName, rPort := splitPort(rHost)
	if kPort != rPort {
		return false
	}
	kParts, rParts := strings.Split(kName, "."), strings.Split(rName, ".")
	if len(kParts) != len(rParts) {
		return false
	}
	for i := range kParts {
		if ok, _ := path.Match(kParts[i], rParts[i]); !ok {
			return false
		}
	}
	return strings.HasPrefix(rPath, kPath)
}

// splitPort splits host:port; a host without a port returns "".
func splitPort(hostport string) (string, string) {
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		return h, p
	}
	return hostport, ""
}

// Repository normalises an image reference to host/path without tag
// or digest, as docker does: no registry means docker.io, and a Docker Hub
// name without a namespace is under library/.
func Repository(image string) string {
	repo, _, _ := strings.Cut(image, "@")
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	first, rest, hasSlash := strings.Cut(repo, "/")
	if !hasSlash || (!strings.ContainsAny(first, ".:") && first != "localhost") {
		first, rest = "docker.io", repo
	}
	if first == dockerHubHost {
		first = "docker.io"
	}
	if first == "docker.io" && !strings.Contains(rest, "/") {
		rest = "library/" + rest
	}
	return first + "/" + rest
}

// Puller is what PullWithCredentials needs of the runtime's image
// service (cri.Images has it).
type Puller interface {
	PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, podSandboxConfig *runtimeapi.PodSandboxConfig) (string, error)
}

// PullWithCredentials tries each credential in turn, or none when there
// are none. The error of a single attempt is returned as is; several are
// listed in one message, in order.
func PullWithCredentials(ctx context.Context, images Puller, spec *runtimeapi.ImageSpec, creds []Credential, sandboxCfg *runtimeapi.PodSandboxConfig) (string, error) {
	if len(creds) == 0 {
		return images.PullImage(ctx, spec, nil, sandboxCfg)
	}
	var msgs []string
	var last error
	for _, c := range creds {
		auth := &runtimeapi.AuthConfig{Username: c.Username, Password: c.Password, IdentityToken: c.IdentityToken, RegistryToken: c.RegistryToken}
		ref, err := images.PullImage(ctx, spec, auth, sandboxCfg)
		if err == nil {
			return ref, nil
		}
		last = err
		msgs = append(msgs, cri.Message(err))
	}
	if len(msgs) == 1 {
		return "", last
	}
	return "", fmt.Errorf("[%s]", strings.Join(msgs, ", "))
}
