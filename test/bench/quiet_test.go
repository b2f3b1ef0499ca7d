package main

import (
	"context"
	"errors"
	"slices"
	"testing"
)

func TestParseProcStat(t *testing.T) {
	stat := "cpu  100 5 50 1000 20 3 2 1 0 0\ncpu0 50 2 25 500 10 1 1 0 0 0\ncpu1 50 3 25 500 10 2 1 1 0 0\nintr 1\n"
	busy, total, err := parseProcStat(stat)
	if err != nil {
		t.Fatal(err)
	}
	if busy != 100+5+50+3+2+1 || total != busy+1000+20 {
		t.Errorf("busy %d total %d, want 161 and 1181", busy, total)
	}
	if n := countCPULines(stat); n != 2 {
		t.Errorf("countCPULines = %d, want 2", n)
	}
	for _, bad := range []string{"", "intr 1\n", "cpu 1 2 3\n", "cpu 1 2 3 x 5 6 7 8\n"} {
		if _, _, err := parseProcStat(bad); err == nil {
			t.Errorf("parseProcStat(%q): no error", bad)
		}
	}
}

func TestBusyCores(t *testing.T) {
	for _, c := range []struct {
		busy, total uint64
		want        float64
	}{
		{0, 0, 0},
		{0, 50, 0},
		{25, 50, 1},   // half of two CPUs
		{50, 50, 2},   // both
		{5, 100, 0.1}, // a tenth of a core
	} {
		if got := busyCores(c.busy, c.total, 2); got < c.want-1e-9 || got > c.want+1e-9 {
			t.Errorf("busyCores(%d, %d) = %g, want %g", c.busy, c.total, got, c.want)
		}
	}
}

func TestInOrder(t *testing.T) {
	var calls []string
	quietWait = func(_ context.Context, what string) error {
		calls = append(calls, "quiet "+what)
		return nil
	}
	t.Cleanup(func() { quietWait = waitQuiet })
	side := func(name string, err error) func() error {
		return func() error {
			calls = append(calls, name)
			return err
		}
	}
	for r, want := range [][]string{
		{"floor", "quiet agent", "agent"}, // round 1: the floor first
		{"quiet agent", "agent", "floor"}, // round 2: the agent first
		{"floor", "quiet agent", "agent"},
	} {
		calls = nil
		if err := inOrder(context.Background(), r, "agent", side("floor", nil), side("agent", nil)); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(calls, want) {
			t.Errorf("round %d: %v, want %v", r+1, calls, want)
		}
	}

	// No floor (the kubelet's column): the agent's side alone.
	calls = nil
	if err := inOrder(context.Background(), 1, "agent", nil, side("agent", nil)); err != nil || !slices.Equal(calls, []string{"quiet agent", "agent"}) {
		t.Errorf("no floor: %v, %v", calls, err)
	}

	// A side that fails ends the round: the other does not run after it.
	calls = nil
	boom := errors.New("boom")
	if err := inOrder(context.Background(), 1, "agent", side("floor", nil), side("agent", boom)); !errors.Is(err, boom) || !slices.Equal(calls, []string{"quiet agent", "agent"}) {
		t.Errorf("failing agent in round 2: %v, %v", calls, err)
	}
}
