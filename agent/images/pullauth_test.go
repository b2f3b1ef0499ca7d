package images

import (
	"context"
	"encoding/base64"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/cri"
)

func TestImageRepository(t *testing.T) {
	for image, want := range map[string]string{
		"busybox":                              "docker.io/library/busybox",
		"busybox:1.36":                         "docker.io/library/busybox",
		"user/app:1":                           "docker.io/user/app",
		"docker.io/nginx":                      "docker.io/library/nginx",
		"index.docker.io/user/app":             "docker.io/user/app",
		"registry.k8s.io/pause:3.9":            "registry.k8s.io/pause",
		"127.0.0.1:5001/mkl/testserver:v1":     "127.0.0.1:5001/mkl/testserver",
		"localhost/app":                        "localhost/app",
		"quay.io/org/app@sha256:0123456789abc": "quay.io/org/app",
		"reg:5000/app:1@sha256:0123":           "reg:5000/app",
	} {
		assert.Equal(t, want, Repository(image), image)
	}
}

func TestRegistryKey(t *testing.T) {
	for loc, want := range map[string]string{
		"https://index.docker.io/v1/": "index.docker.io",
		"quay.io":                     "quay.io",
		"http://127.0.0.1:5001/v2/":   "127.0.0.1:5001",
		"reg.example/team/":           "reg.example/team",
		"https://reg.example/v2/team": "reg.example/team",
	} {
		assert.Equal(t, want, registryKey(loc), loc)
	}
}

func TestRegistryKeyMatches(t *testing.T) {
	for _, tc := range []struct {
		key, repo string
		want      bool
	}{
		{"quay.io", "quay.io/org/app", true},
		{"quay.io", "quay.io.evil/org/app", false},
		{"127.0.0.1:5001", "127.0.0.1:5001/mkl/app", true},
		{"127.0.0.1:5001", "127.0.0.1:5000/mkl/app", false},
		{"127.0.0.1", "127.0.0.1:5001/mkl/app", false},
		{"*.example.com", "reg.example.com/app", true},
		{"*.example.com", "example.com/app", false},
		{"reg.example.com/team", "reg.example.com/team/app", true},
		{"reg.example.com/team", "reg.example.com/other/app", false},
	} {
		assert.Equal(t, tc.want, registryKeyMatches(tc.key, tc.repo), "%s ~ %s", tc.key, tc.repo)
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestKeyring_Lookup(t *testing.T) {
	k := &Keyring{}
	errs := k.add(map[string]dockerConfigEntry{
		"https://index.docker.io/v1/": {Auth: b64("hub:hubpw")},
		"reg.example.com":             {Username: "all", Password: "allpw"},
		"reg.example.com/team":        {Auth: b64("team:teampw")},
		"broken.example.com":          {Auth: "%%%"},
	})
	require.Len(t, errs, 1)
	assert.ErrorContains(t, errs[0], `registry "broken.example.com": auth:`)

	users := func(repo string) []string {
		var out []string
		for _, c := range k.Lookup(repo) {
			out = append(out, c.Username)
		}
		return out
	}
	assert.Equal(t, []string{"team", "all"}, users("reg.example.com/team/app"), "most specific first, then the others")
	assert.Equal(t, []string{"all"}, users("reg.example.com/other/app"))
	assert.Equal(t, []string{"hub"}, users(Repository("busybox")), "index.docker.io serves docker.io")
	assert.Empty(t, users("quay.io/org/app"))
}

func TestParseDockerConfig(t *testing.T) {
	for name, data := range map[string]string{
		"config.json": `{"auths": {"reg:5001": {"auth": "` + b64("u:p:w") + `"}}}`,
		".dockercfg":  `{"reg:5001": {"username": "u", "password": "p:w", "email": "x@y"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			entries, err := parseDockerConfig([]byte(data))
			require.NoError(t, err)
			c, err := entries["reg:5001"].credential()
			require.NoError(t, err)
			assert.Equal(t, Credential{Username: "u", Password: "p:w"}, c)
		})
	}
	_, err := parseDockerConfig([]byte("not json"))
	assert.Error(t, err)
}

// authImages is a cri.Images that accepts one credential and records what
// each pull was given.
type authImages struct {
	cri.Images
	user, password string
	seen           []string
}

func (i *authImages) PullImage(_ context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, _ *runtimeapi.PodSandboxConfig) (string, error) {
	if auth == nil {
		i.seen = append(i.seen, "anonymous")
		return "", status.Error(codes.Unknown, "pull: 401 Unauthorized")
	}
	i.seen = append(i.seen, auth.Username)
	if auth.Username == i.user && auth.Password == i.password {
		return "sha256:ok", nil
	}
	return "", status.Error(codes.Unknown, "pull as "+auth.Username+": 401 Unauthorized")
}

func TestPullWithCredentials(t *testing.T) {
	spec := &runtimeapi.ImageSpec{Image: "reg:5001/app:1"}
	ctx := context.Background()

	imgs := &authImages{user: "good", password: "pw"}
	ref, err := PullWithCredentials(ctx, imgs, spec, []Credential{{Username: "bad", Password: "x"}, {Username: "good", Password: "pw"}, {Username: "later"}}, nil)
	require.NoError(t, err)
	assert.Equal(t, "sha256:ok", ref)
	assert.Equal(t, []string{"bad", "good"}, imgs.seen, "tried in order until one works")

	imgs = &authImages{user: "good", password: "pw"}
	_, err = PullWithCredentials(ctx, imgs, spec, nil, nil)
	assert.Equal(t, "pull: 401 Unauthorized", cri.Message(err), "no credentials: anonymous, the registry's message kept")
	assert.Equal(t, []string{"anonymous"}, imgs.seen)

	_, err = PullWithCredentials(ctx, imgs, spec, []Credential{{Username: "a"}, {Username: "b"}}, nil)
	assert.EqualError(t, err, "[pull as a: 401 Unauthorized, pull as b: 401 Unauthorized]")
	// The caller classifies (the engine wraps it in its ErrImagePull):
	// the error wraps no sentinel.
	assert.Nil(t, errors.Unwrap(err), "the caller classifies")
}
