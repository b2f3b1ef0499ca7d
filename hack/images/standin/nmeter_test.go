package main

import (
	"strings"
	"testing"
	"time"
)

func TestNmeterLine(t *testing.T) {
	at := time.Date(2026, 11, 29, 3, 8, 27, 438_900_000, time.UTC)
	for format, want := range map[string]string{
		"%3t":       "03:08:27.438", // what the node e2e specs ask for
		"%t":        "03:08:27",
		"at %1t %%": "at 03:08:27.4 %",
		"%9t":       "03:08:27.438900000",
	} {
		got, err := nmeterLine(format, at)
		if err != nil || got != want {
			t.Errorf("nmeterLine(%q) = %q, %v; want %q", format, got, err, want)
		}
	}
	for format, want := range map[string]string{
		"%c":   "not supported",
		"%3":   "ends inside",
		"%10t": "at most 9",
	} {
		if _, err := nmeterLine(format, at); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("nmeterLine(%q): err %v, want one containing %q", format, err, want)
		}
	}
}

func TestNmeterMain_RefusesBadArguments(t *testing.T) {
	for _, args := range [][]string{nil, {"-d", "x", "%t"}, {"-d-5", "%t"}, {"-c", "%t"}, {"%c"}} {
		if code := nmeterMain(args); code != 1 {
			t.Errorf("nmeter %q: exit %d, want 1", args, code)
		}
	}
}
