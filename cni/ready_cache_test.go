//go:build linux

package cni

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readyRuntime is a runtime's Status as ReadyCache sees it: it counts the
// questions and answers ready unless told otherwise.
type readyRuntime struct {
	asks     int
	notReady bool
	err      error
}

func (r *readyRuntime) ask(context.Context) (bool, string, string, error) {
	r.asks++
	if r.err != nil {
		return false, "", "", r.err
	}
	if r.notReady {
		return false, "NetworkPluginNotReady", "cni config uninitialized", nil
	}
	return true, "", "", nil
}

// readyFixture is a conf dir holding the node's conflist, a cache on a
// clock the test moves, and a runtime.
func readyFixture(t *testing.T) (Config, *ReadyCache, *time.Time, *readyRuntime) {
	t.Helper()
	cfg := Config{Name: "mk-test", ConfDir: t.TempDir()}
	require.NoError(t, os.WriteFile(ConfPath(cfg), []byte(`{"cniVersion":"1.0.0","name":"mk-test","plugins":[]}`), 0o644))
	now := time.Unix(1000, 0)
	c := &ReadyCache{now: func() time.Time { return now }}
	return cfg, c, &now, &readyRuntime{}
}

func TestReadyCache_ReusesAReadyAnswerWhileTheConfigStands(t *testing.T) {
	ctx := context.Background()
	cfg, c, now, rt := readyFixture(t)

	ok, _, _, err := c.Ask(ctx, cfg, rt.ask)
	require.NoError(t, err)
	require.True(t, ok)
	for range 3 {
		*now = now.Add(time.Second)
		ok, _, _, err = c.Reuse(ctx, cfg, rt.ask)
		require.NoError(t, err)
		assert.True(t, ok)
	}
	assert.Equal(t, 1, rt.asks, "the starts within ReadyReuse of a ready answer do not ask")

	*now = now.Add(ReadyReuse) // older than ReadyReuse now
	_, _, _, _ = c.Reuse(ctx, cfg, rt.ask)
	assert.Equal(t, 2, rt.asks, "an answer older than ReadyReuse is asked again")
	_, _, _, _ = c.Reuse(ctx, cfg, rt.ask)
	assert.Equal(t, 2, rt.asks, "…and the new answer stands")

	_, _, _, _ = c.Ask(ctx, cfg, rt.ask)
	assert.Equal(t, 3, rt.asks, "Ask always asks (readyz, the start's wait)")

	// What sorts after the node's conflist, or is not a CNI config, is
	// not the runtime's config: the answer stands.
	require.NoError(t, os.WriteFile(filepath.Join(cfg.ConfDir, "99-later.conflist"), []byte(`{}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(cfg.ConfDir, "00-notes.txt"), []byte(`x`), 0o644))
	_, _, _, _ = c.Reuse(ctx, cfg, rt.ask)
	assert.Equal(t, 3, rt.asks)
}

func TestReadyCache_AChangedConfigIsAskedAgain(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, cfg Config)
	}{
		{"conflist removed", func(t *testing.T, cfg Config) { require.NoError(t, os.Remove(ConfPath(cfg))) }},
		{"conflist rewritten in place", func(t *testing.T, cfg Config) {
			f, err := os.OpenFile(ConfPath(cfg), os.O_WRONLY|os.O_APPEND, 0)
			require.NoError(t, err)
			_, err = f.WriteString("\n")
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}},
		{"conflist replaced by a rename", func(t *testing.T, cfg Config) {
			tmp := filepath.Join(cfg.ConfDir, "new.tmp")
			require.NoError(t, os.WriteFile(tmp, []byte(`{"cniVersion":"1.0.0","name":"mk-test","plugins":[{}]}`), 0o644))
			require.NoError(t, os.Rename(tmp, ConfPath(cfg)))
		}},
		{"another config added before it", func(t *testing.T, cfg Config) {
			require.NoError(t, os.WriteFile(filepath.Join(cfg.ConfDir, "00-other.conflist"), []byte(`{}`), 0o644))
		}},
		{"conflist turned into a symlink", func(t *testing.T, cfg Config) {
			target := filepath.Join(t.TempDir(), "elsewhere.conflist")
			require.NoError(t, os.Rename(ConfPath(cfg), target))
			require.NoError(t, os.Symlink(target, ConfPath(cfg)))
		}},
		{"another config shadowing it, a directory", func(t *testing.T, cfg Config) {
			require.NoError(t, os.Mkdir(filepath.Join(cfg.ConfDir, "00-dir.conf"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(cfg.ConfDir, "01-other.json"), []byte(`{}`), 0o644))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, c, now, rt := readyFixture(t)
			_, _, _, err := c.Ask(ctx, cfg, rt.ask)
			require.NoError(t, err)
			tc.change(t, cfg)
			*now = now.Add(10 * time.Millisecond)
			rt.notReady = true
			ok, reason, _, err := c.Reuse(ctx, cfg, rt.ask)
			require.NoError(t, err)
			assert.False(t, ok, "the runtime's answer, not the remembered one")
			assert.Equal(t, "NetworkPluginNotReady", reason)
			assert.Equal(t, 2, rt.asks)
		})
	}
}

func TestReadyCache_NeverRemembersNotReadyOrErrors(t *testing.T) {
	ctx := context.Background()
	cfg, c, now, rt := readyFixture(t)
	_, _, _, _ = c.Ask(ctx, cfg, rt.ask)

	// A not-ready answer ends the standing ready one.
	rt.notReady = true
	*now = now.Add(time.Millisecond)
	ok, _, _, _ := c.Ask(ctx, cfg, rt.ask)
	require.False(t, ok)
	*now = now.Add(time.Millisecond)
	ok, _, _, _ = c.Reuse(ctx, cfg, rt.ask)
	assert.False(t, ok)
	ok, _, _, _ = c.Reuse(ctx, cfg, rt.ask)
	assert.False(t, ok)
	assert.Equal(t, 4, rt.asks, "not ready is asked every time")

	// So does an error.
	rt.notReady = false
	_, _, _, _ = c.Reuse(ctx, cfg, rt.ask)
	rt.err = errors.New("runtime unavailable")
	*now = now.Add(time.Millisecond)
	_, _, _, err := c.Ask(ctx, cfg, rt.ask)
	require.Error(t, err)
	_, _, _, err = c.Reuse(ctx, cfg, rt.ask)
	assert.Error(t, err, "an error is not covered by the ready answer before it")
	assert.Equal(t, 7, rt.asks)
}

func TestReadyCache_AnOlderAnswerDoesNotReplaceANewerOne(t *testing.T) {
	ctx := context.Background()
	cfg, c, now, rt := readyFixture(t)
	// The outer question is asked first and answers ready last; a newer
	// question, asked meanwhile, answered not ready.
	// The clock does not move: questions are ordered as they begin.
	_ = now
	ok, _, _, _ := c.Ask(ctx, cfg, func(ctx context.Context) (bool, string, string, error) {
		rt.notReady = true
		inner, _, _, _ := c.Ask(ctx, cfg, rt.ask)
		require.False(t, inner)
		rt.notReady = false
		return true, "", "", nil
	})
	require.True(t, ok)
	ok, _, _, _ = c.Reuse(ctx, cfg, rt.ask)
	assert.True(t, ok)
	assert.Equal(t, 2, rt.asks, "the newer not-ready answer stood, so the start asked")
}

func TestReadyCache_NoConflistOrNilAsksEveryTime(t *testing.T) {
	ctx := context.Background()
	cfg, c, _, rt := readyFixture(t)
	require.NoError(t, os.Remove(ConfPath(cfg)))
	for range 3 {
		_, _, _, _ = c.Reuse(ctx, cfg, rt.ask)
	}
	assert.Equal(t, 3, rt.asks, "without the node's conflist (another network's config) nothing is reused")

	var none *ReadyCache
	rt.asks = 0
	_, _, _, _ = none.Ask(ctx, cfg, rt.ask)
	_, _, _, _ = none.Reuse(ctx, cfg, rt.ask)
	assert.Equal(t, 2, rt.asks)
}

func TestReadyCache_StartsShareTheQuestionInFlight(t *testing.T) {
	ctx := context.Background()
	cfg, _, _, _ := readyFixture(t)
	// A clock that moves by ReadyReuse at every reading: no answer ever
	// stands, so a start either shares the question in flight or asks.
	var mu sync.Mutex
	clock := time.Unix(1000, 0)
	c := NewReadyCache(func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(ReadyReuse)
		return clock
	})
	asks := 0
	asked := func() int { mu.Lock(); defer mu.Unlock(); return asks }
	release := make(chan error)
	blocked := func(context.Context) (bool, string, string, error) {
		mu.Lock()
		asks++
		mu.Unlock()
		if err := <-release; err != nil {
			return false, "", "", err
		}
		return true, "", "", nil
	}
	joined := func() int { c.mu.Lock(); defer c.mu.Unlock(); return c.joined }
	// run asks once (the question in flight), starts n Reuse calls, answers
	// first once all n wait on that question, then every later question
	// ready, and returns the n answers and the first question's.
	run := func(n int, first error) []error {
		firstDone := make(chan error, 1)
		go func() { _, _, _, err := c.Ask(ctx, cfg, blocked); firstDone <- err }()
		require.Eventually(t, func() bool { c.mu.Lock(); defer c.mu.Unlock(); return c.flight != nil }, 5*time.Second, time.Millisecond)
		base := joined()
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				ok, _, _, err := c.Reuse(ctx, cfg, blocked)
				if err == nil && !ok {
					err = errors.New("not ready")
				}
				errs[i] = err
			})
		}
		require.Eventually(t, func() bool { return joined()-base == n }, 5*time.Second, time.Millisecond)
		release <- first
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		for {
			select {
			case release <- nil:
				continue
			case <-done:
			}
			break
		}
		return append(errs, <-firstDone)
	}

	for _, err := range run(20, nil) {
		assert.NoError(t, err)
	}
	assert.Equal(t, 1, asked(), "20 starts shared the question in flight")

	// A question that fails is not shared (its error may be its asker's
	// own context): each start that waited on it asks for itself.
	errs := run(3, errors.New("context canceled"))
	assert.Error(t, errs[3], "the failed question's caller sees its error")
	for _, err := range errs[:3] {
		assert.NoError(t, err, "a start that waited on a failed question asked again")
	}
	assert.Equal(t, 1+1+3, asked())
}
