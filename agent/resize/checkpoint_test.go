package resize

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckpoint_RoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pods", "uid-1") // created by the save
	pod, _ := fixture()
	cp := Checkpoint{Allocated: Of(pod), Actuated: Resources{"app": {Limits: rl("1", "")}}}
	require.NoError(t, SaveCheckpoint(dir, cp))
	got, ok, err := LoadCheckpoint(dir)
	require.NoError(t, err)
	require.True(t, ok)
	assert.True(t, got.Allocated.Equal(cp.Allocated))
	assert.True(t, got.Actuated.Equal(cp.Actuated))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left")
	assert.Equal(t, CheckpointFile, entries[0].Name())
}

func TestLoadCheckpoint_Untrusted(t *testing.T) {
	tests := map[string]struct {
		content string // "": no file
		symlink bool   // the checkpoint is a symlink to a good file
		wantErr string // "": none (ok false all the same)
	}{
		"none":             {},
		"torn":             {content: `{"allocated":`, wantErr: "unexpected end of JSON input"},
		"no allocation":    {content: `{"actuated":{}}`, wantErr: "no allocated resources"},
		"a symlink":        {symlink: true},
		"not JSON at all":  {content: "\x00\x01", wantErr: "invalid character"},
		"allocation null":  {content: `{"allocated":null}`, wantErr: "no allocated resources"},
		"allocation wrong": {content: `{"allocated":[1]}`, wantErr: "cannot unmarshal"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, CheckpointFile)
			switch {
			case tc.symlink:
				other := t.TempDir()
				require.NoError(t, SaveCheckpoint(other, Checkpoint{Allocated: Resources{}}))
				require.NoError(t, os.Symlink(filepath.Join(other, CheckpointFile), path))
			case tc.content != "":
				require.NoError(t, os.WriteFile(path, []byte(tc.content), 0o600))
			}
			cp, ok, err := LoadCheckpoint(dir)
			assert.False(t, ok, "not trusted")
			assert.Nil(t, cp.Allocated)
			if tc.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
			assert.Contains(t, err.Error(), path, "the error names the file")
		})
	}
}

// Concurrent writers each rename a whole file of their own into place: the
// checkpoint is always one of the snapshots, never a torn mix, and no
// temporary file is left.
func TestSaveCheckpoint_ConcurrentWritersLeaveAWholeFile(t *testing.T) {
	dir := t.TempDir()
	const writers = 16
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 20 {
				cp := Checkpoint{Allocated: Resources{fmt.Sprintf("c%d", i): {Limits: rl(fmt.Sprintf("%dm", 100+j), "64Mi")}}}
				assert.NoError(t, SaveCheckpoint(dir, cp))
			}
		}()
	}
	wg.Wait()
	cp, ok, err := LoadCheckpoint(dir)
	require.NoError(t, err)
	require.True(t, ok)
	require.Len(t, cp.Allocated, 1)
	for _, r := range cp.Allocated {
		assert.Equal(t, "119m", r.Limits.Cpu().String(), "a writer's last snapshot")
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file is left")
}

func TestSaveCheckpoint_Fails(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	err := SaveCheckpoint(filepath.Join(file, "pod"), Checkpoint{Allocated: Resources{}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "save resources checkpoint")
}
