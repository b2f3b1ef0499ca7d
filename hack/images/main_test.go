package main

import (
	"archive/tar"
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testSpec() imageSpec {
	return imageSpec{
		repo: "minikubelet/busybox", tag: "t",
		layers: []layerSpec{
			{what: "bb", entries: busyboxEntries([]byte("#!fake busybox"), []string{"sh", "ls", "busybox", "sh"})},
			{what: "/bin2", entries: binaryEntries("bin2", []byte("x"))},
		},
		cmd: []string{"sh"},
	}
}

func TestBuildImage_Reproducible(t *testing.T) {
	a, err := buildImage(testSpec(), "amd64")
	require.NoError(t, err)
	b, err := buildImage(testSpec(), "amd64")
	require.NoError(t, err)
	da, err := a.Digest()
	require.NoError(t, err)
	db, err := b.Digest()
	require.NoError(t, err)
	assert.Equal(t, da, db)

	cf, err := a.ConfigFile()
	require.NoError(t, err)
	assert.Equal(t, "amd64", cf.Architecture)
	assert.Equal(t, "linux", cf.OS)
	assert.Equal(t, []string{"sh"}, cf.Config.Cmd)
	assert.Equal(t, epoch, cf.Created.UTC())
	assert.Len(t, cf.RootFS.DiffIDs, 2)
	assert.Len(t, cf.History, 2)

	other := testSpec()
	other.layers[1].entries = binaryEntries("bin2", []byte("y"))
	c, err := buildImage(other, "amd64")
	require.NoError(t, err)
	dc, err := c.Digest()
	require.NoError(t, err)
	assert.NotEqual(t, da, dc, "content change must change the digest")
}

func TestBusyboxLayer_Contents(t *testing.T) {
	raw, err := tarLayer(busyboxEntries([]byte("bb"), []string{"sh", "ls", "busybox", "sh", "/usr/bin/env"}))
	require.NoError(t, err)
	type obj struct {
		typ    byte
		mode   int64
		target string
	}
	got := map[string]obj{}
	var order []string
	tr := tar.NewReader(bytes.NewReader(raw))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		assert.Equal(t, epoch, h.ModTime.UTC(), h.Name)
		assert.Zero(t, h.Uid, h.Name)
		got[h.Name] = obj{h.Typeflag, h.Mode, h.Linkname}
		order = append(order, h.Name)
	}
	assert.IsIncreasing(t, order, "entries sorted")
	assert.Equal(t, obj{tar.TypeDir, 0o1777, ""}, got["tmp/"])
	assert.Equal(t, obj{tar.TypeReg, 0o755, ""}, got["bin/busybox"])
	assert.Equal(t, obj{tar.TypeSymlink, 0o777, "busybox"}, got["bin/sh"])
	assert.Equal(t, obj{tar.TypeSymlink, 0o777, "busybox"}, got["bin/env"])
	assert.Contains(t, got, "etc/passwd")
	assert.Contains(t, got, "etc/group")
	assert.Len(t, got, 10, "bin etc root tmp busybox passwd group sh ls env")
}

func TestTarLayer_RejectsDuplicates(t *testing.T) {
	_, err := tarLayer([]entry{dir("a", 0o755), dir("a", 0o755)})
	require.ErrorContains(t, err, `duplicate layer entry "a"`)
}
