package volume

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

func TestCheckHostPath(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	typ := func(t v1.HostPathType) *v1.HostPathType { return &t }
	cases := []struct {
		name    string
		path    string
		typ     *v1.HostPathType
		wantErr string
	}{
		{"unset accepts anything", filepath.Join(dir, "missing"), nil, ""},
		{"directory exists", dir, typ(v1.HostPathDirectory), ""},
		{"directory missing", filepath.Join(dir, "nope"), typ(v1.HostPathDirectory), "does not exist"},
		{"directory is a file", file, typ(v1.HostPathDirectory), "is not a directory"},
		{"file is a directory", dir, typ(v1.HostPathFile), "is not a file"},
		{"socket is a file", file, typ(v1.HostPathSocket), "is not a socket"},
		{"DirectoryOrCreate creates", filepath.Join(dir, "new/dir"), typ(v1.HostPathDirectoryOrCreate), ""},
		{"FileOrCreate creates", filepath.Join(dir, "new/file"), typ(v1.HostPathFileOrCreate), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := checkHostPath(&v1.HostPathVolumeSource{Path: tc.path, Type: tc.typ})
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
	fi, err := os.Stat(filepath.Join(dir, "new/dir"))
	require.NoError(t, err)
	assert.True(t, fi.IsDir())
	fi, err = os.Stat(filepath.Join(dir, "new/file"))
	require.NoError(t, err)
	assert.True(t, fi.Mode().IsRegular())
}
