package main

import "testing"

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
