package agent

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestPullKeyring(t *testing.T) {
	root := t.TempDir()
	nodeFile := filepath.Join(root, "config.json")
	require.NoError(t, os.WriteFile(nodeFile, []byte(`{"auths": {"reg:5001": {"auth": "`+b64("node:nodepw")+`"}}}`), 0o600))
	a := New(Config{NodeName: "node-1", RootDir: root, PodLogDir: t.TempDir(), ResolvConf: "/nonexistent", Network: testNetwork(t), HostIPs: []string{"192.0.2.1"}}, Deps{})
	a.SetConfigData(nil, []*v1.Secret{
		{ObjectMeta: pullTestMeta("shop", "regcred"), Type: v1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(`{"auths": {"reg:5001": {"username": "pod", "password": "podpw"}}}`)}},
		{ObjectMeta: pullTestMeta("shop", "legacy"), Type: v1.SecretTypeDockercfg,
			Data: map[string][]byte{v1.DockerConfigKey: []byte(`{"reg:5001": {"auth": "` + b64("old:oldpw") + `"}}`)}},
		{ObjectMeta: pullTestMeta("shop", "opaque"), Type: v1.SecretTypeOpaque, Data: map[string][]byte{"x": []byte("y")}},
		{ObjectMeta: pullTestMeta("other", "elsewhere"), Type: v1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(`{"auths": {"reg:5001": {"username": "no"}}}`)}},
	})
	pod := &v1.Pod{Spec: v1.PodSpec{ImagePullSecrets: []v1.LocalObjectReference{{Name: "regcred"}, {Name: "missing"}, {Name: "legacy"}, {Name: "opaque"}, {Name: "elsewhere"}}}}
	pod.Namespace = "shop"

	k, missing, problems := a.imageManager().Keyring(pod)
	assert.Equal(t, []string{"missing", "elsewhere"}, missing, "secrets are looked up in the pod's namespace")
	assert.Empty(t, problems)
	var users []string
	for _, c := range k.Lookup("reg:5001/app") {
		users = append(users, c.Username)
	}
	assert.Equal(t, []string{"pod", "old", "node"}, users, "pod secrets in order, then the node's file (<root>/config.json)")

	a.cfg.PullSecretFile = filepath.Join(root, "nope.json")
	_, _, problems = a.imageManager().Keyring(pod)
	require.Len(t, problems, 1, "an explicit node file must exist")
}

func pullTestMeta(ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name}
}
