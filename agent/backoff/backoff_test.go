package backoff

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	testclock "k8s.io/utils/clock/testing"
)

// The kubelet's restart curve: the first restart is immediate, then 10 s,
// 20 s, 40 s … capped at 300 s, each measured from the crash.
func TestBackoff_CrashLoopCurve(t *testing.T) {
	clk := testclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := New(10*time.Second, 300*time.Second, 10*time.Minute)
	key := "pod_ns_uid_c_hash"
	var delays []time.Duration
	for crash := 0; crash < 9; crash++ {
		finished := clk.Now() // the container just crashed
		in, delay := b.InBackoffSince(key, finished, clk.Now())
		if !in {
			delays = append(delays, 0)
		} else {
			delays = append(delays, delay)
			// Not yet one moment before the delay, allowed right at it.
			clk.Step(delay - time.Millisecond)
			in, _ = b.InBackoffSince(key, finished, clk.Now())
			assert.True(t, in, "crash %d: still backing off just before %s", crash, delay)
			clk.Step(time.Millisecond)
			in, _ = b.InBackoffSince(key, finished, clk.Now())
			assert.False(t, in, "crash %d: free at %s", crash, delay)
		}
		b.Next(key, finished)
		clk.Step(time.Second) // runs a second, then crashes again
	}
	s := func(n int) time.Duration { return time.Duration(n) * time.Second }
	assert.Equal(t, []time.Duration{0, s(10), s(20), s(40), s(80), s(160), s(300), s(300), s(300)}, delays)
}

// A container that ran for more than 10 minutes after its last approved
// start begins again at the initial delay.
func TestBackoff_ResetAfterTenMinutes(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := New(10*time.Second, 300*time.Second, 10*time.Minute)
	b.Next("k", t0)
	b.Next("k", t0.Add(time.Second))
	b.Next("k", t0.Add(2*time.Second)) // now at 40 s
	in, d := b.InBackoffSince("k", t0.Add(3*time.Second), t0.Add(4*time.Second))
	assert.True(t, in)
	assert.Equal(t, 40*time.Second, d)
	// Crashed after running 10 min + 1 s: the entry has expired.
	crash := t0.Add(2*time.Second + 10*time.Minute + time.Second)
	in, _ = b.InBackoffSince("k", crash, crash)
	assert.False(t, in)
	b.Next("k", crash)
	_, d = b.InBackoffSince("k", crash, crash)
	assert.Equal(t, 10*time.Second, d, "starts over at the initial delay")
}

// Image pulls back off from the last failure: 10 s, 20 s, …
func TestBackoff_ImagePull(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := New(10*time.Second, 300*time.Second, 0)
	in, _ := b.InBackoffSinceUpdate("uid_img", t0)
	assert.False(t, in, "no failure yet")
	b.Next("uid_img", t0)
	in, left := b.InBackoffSinceUpdate("uid_img", t0.Add(4*time.Second))
	assert.True(t, in)
	assert.Equal(t, 6*time.Second, left)
	in, _ = b.InBackoffSinceUpdate("uid_img", t0.Add(10*time.Second))
	assert.False(t, in)
	b.Next("uid_img", t0.Add(10*time.Second))
	in, left = b.InBackoffSinceUpdate("uid_img", t0.Add(11*time.Second))
	assert.True(t, in)
	assert.Equal(t, 19*time.Second, left, "second failure: 20 s")
	b.Reset("uid_img")
	in, _ = b.InBackoffSinceUpdate("uid_img", t0.Add(11*time.Second))
	assert.False(t, in)
}

// The flags may set a cap below the initial delay: the cap wins.
func TestBackoff_CapBelowInitial(t *testing.T) {
	b := New(10*time.Second, time.Second, 0)
	t0 := time.Now()
	b.Next("k", t0)
	_, d := b.InBackoffSince("k", t0, t0)
	assert.Equal(t, time.Second, d)
}

// A failed teardown is tried again at 1, 2, 4, 8 s, then every 10 s (the
// kubelet's backOffPeriod), however often it failed.
func TestTeardownRetry(t *testing.T) {
	var got []time.Duration
	for _, failures := range []int{0, 1, 2, 3, 4, 5, 6, 64, 1 << 30} {
		got = append(got, TeardownRetry(failures))
	}
	s := func(n int) time.Duration { return time.Duration(n) * time.Second }
	assert.Equal(t, []time.Duration{s(1), s(1), s(2), s(4), s(8), s(10), s(10), s(10), s(10)}, got)
}
