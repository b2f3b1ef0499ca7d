package source

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/agent/manifest"
)

// ConfigMaps and Secrets added through the API are files of the store
// (secrets 0600), read back by a new store (a restarted daemon), carried by
// every update, and gone after Delete.
func TestPodStore_ConfigData(t *testing.T) {
	s, dir := newTestStore(t)

	cm, err := s.AddConfigMap(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"mode": "fast"}})
	require.NoError(t, err)
	assert.Equal(t, "default", cm.Namespace)
	u := drain(t, s)
	assert.Equal(t, SourceAPI, u.Source)
	require.Len(t, u.ConfigMaps, 1)
	assert.Equal(t, "fast", u.ConfigMaps[0].Data["mode"])

	sec, err := s.AddSecret(&v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "prod"},
		StringData: map[string]string{"password": "s3cret"}})
	require.NoError(t, err)
	assert.Equal(t, v1.SecretTypeOpaque, sec.Type)
	assert.Equal(t, []byte("s3cret"), sec.Data["password"], "stringData is merged into data")
	assert.Nil(t, sec.StringData)
	u = drain(t, s)
	require.Len(t, u.ConfigMaps, 1)
	require.Len(t, u.Secrets, 1)

	secFile := filepath.Join(dir, "secrets", "prod_creds.yaml")
	fi, err := os.Stat(secFile)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	fi, err = os.Stat(filepath.Dir(secFile))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	raw, err := os.ReadFile(secFile)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), "creationTimestamp")
	assert.NotContains(t, string(raw), "s3cret", "data is base64, as in the API")
	_, err = os.Stat(filepath.Join(dir, "configmaps", "default_settings.yaml"))
	require.NoError(t, err)

	// The pods of the store are not disturbed by the subdirectories.
	pods, errs := s.List()
	assert.Empty(t, pods)
	assert.Empty(t, errs)

	// A restarted daemon reads the same objects back.
	s2, err := NewPodStore(dir, "node-1")
	require.NoError(t, err)
	cms, secrets, ferrs := s2.ListConfigData()
	require.Empty(t, ferrs)
	require.Len(t, cms, 1)
	require.Len(t, secrets, 1)
	assert.Equal(t, cm, cms[0])
	assert.Equal(t, sec, secrets[0])

	_, err = s2.AddConfigMap(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "default"}})
	assert.ErrorIs(t, err, ErrConfigDataExists)

	require.NoError(t, s2.DeleteSecret("prod", "creds"))
	u = drain(t, s2)
	assert.Len(t, u.ConfigMaps, 1)
	assert.Empty(t, u.Secrets)
	_, err = os.Stat(secFile)
	assert.ErrorIs(t, err, os.ErrNotExist)
	assert.ErrorIs(t, s2.DeleteSecret("prod", "creds"), ErrConfigDataNotFound)
	assert.ErrorIs(t, s2.DeleteConfigMap("default", "../x"), ErrConfigDataNotFound)
	require.NoError(t, s2.DeleteConfigMap("default", "settings"))
	cms, secrets, _ = s2.ListConfigData()
	assert.Empty(t, cms)
	assert.Empty(t, secrets)
}

// The API's ConfigMaps and Secrets get the validation of manifest files,
// as field errors for a 422.
func TestPodStore_ConfigDataInvalid(t *testing.T) {
	s, dir := newTestStore(t)
	_, err := s.AddConfigMap(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "Bad_Name"}, Data: map[string]string{"a/b": "x"}})
	var cie *ConfigInvalidError
	require.ErrorAs(t, err, &cie)
	assert.Equal(t, "ConfigMap", cie.Kind)
	var fields []string
	for _, e := range cie.Errs {
		fields = append(fields, e.Field)
	}
	assert.ElementsMatch(t, []string{"metadata.name", "data[a/b]"}, fields)
	assert.ErrorIs(t, err, manifest.ErrInvalidManifest)

	_, err = s.AddSecret(&v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tls"}, Type: v1.SecretTypeTLS})
	require.ErrorAs(t, err, &cie)
	assert.Equal(t, "Secret", cie.Kind)
	assert.Contains(t, err.Error(), "data[tls.crt]: Required value")

	// A hand-edited file is reported (when the store opens) and does not
	// hide the others.
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "configmaps"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "configmaps", "default_x.yaml"), []byte("metadata: {name: why}\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "configmaps", "default_z.yaml"), []byte("metadata: {name: z}\nbogus: 1\n"), 0o600))
	_, err = s.AddConfigMap(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ok"}})
	require.NoError(t, err)
	s, err = NewPodStore(dir, "node-1")
	require.NoError(t, err)
	cms, _, ferrs := s.ListConfigData()
	require.Len(t, cms, 1)
	assert.Equal(t, "ok", cms[0].Name)
	require.Len(t, ferrs, 2)
	assert.True(t, errors.Is(ferrs[0].Err, manifest.ErrInvalidManifest))
	assert.Contains(t, ferrs[0].Err.Error(), "belongs in default_why.yaml")
	assert.Contains(t, ferrs[1].Err.Error(), "bogus: unknown field")
}

// With a secret dir, the store keeps its Secrets there and nothing of
// them under the store directory; a restarted daemon reads them back; the
// Secrets an older version stored under the store directory are moved
// there at open (none lost) and removed from the disk.
func TestPodStore_SecretsInSecretDir(t *testing.T) {
	base := t.TempDir()
	dir, secretDir := filepath.Join(base, "root", "api-pods"), filepath.Join(base, "tmpfs", "secrets")

	// An older version's store: a Secret under <dir>/secrets.
	old, err := NewPodStore(dir, "node-1")
	require.NoError(t, err)
	_, err = old.AddSecret(&v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "legacy"}, StringData: map[string]string{"k": "legacy-7d1e"}})
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(dir, storeSecretDir, "default_legacy.yaml"))

	s, err := NewPodStoreWithSecretDir(dir, secretDir, "node-1")
	require.NoError(t, err)
	assert.NoDirExists(t, filepath.Join(dir, storeSecretDir), "moved off the disk")
	_, err = s.AddSecret(&v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "fresh"}, StringData: map[string]string{"k": "fresh-92ab"}})
	require.NoError(t, err)
	_, err = s.AddConfigMap(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"k": "v"}})
	require.NoError(t, err)
	assertNoFileContains(t, filepath.Join(base, "root"), "legacy-7d1e")
	assertNoFileContains(t, filepath.Join(base, "root"), "fresh-92ab")
	fi, err := os.Stat(filepath.Join(secretDir, "default_fresh.yaml"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	assert.FileExists(t, filepath.Join(dir, storeConfigMapDir, "default_cm.yaml"), "ConfigMaps stay on disk")

	// The daemon restarts: both Secrets are back.
	s2, err := NewPodStoreWithSecretDir(dir, secretDir, "node-1")
	require.NoError(t, err)
	_, secrets, bad := s2.ListConfigData()
	assert.Empty(t, bad)
	var names []string
	for _, sec := range secrets {
		names = append(names, sec.Name)
	}
	assert.ElementsMatch(t, []string{"legacy", "fresh"}, names)
	require.NoError(t, s2.DeleteSecret("default", "legacy"))
	assert.NoFileExists(t, filepath.Join(secretDir, "default_legacy.yaml"))
}

// assertNoFileContains (as the agent's configdata_test.go) fails when a file under dir holds needle.
func assertNoFileContains(t *testing.T, dir, needle string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		assert.NotContains(t, string(data), needle, "%s holds the secret", p)
		return nil
	}))
}
