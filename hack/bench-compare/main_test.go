package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const oldRun = `{"machine": {"commit": "aaa111", "date": "2026-11-01T10:00:00Z", "loadavg_at_start": "0.40 0.30 0.20"},
 "results": [
  {"scenario": "start", "metric": "submit → started", "unit": "ms", "raw": {"median": 100}, "minikubelet": {"median": 110}, "ratio": 1.10},
  {"scenario": "manifest-start", "metric": "file → running", "unit": "ms", "minikubelet": {"median": 900}, "kubelet": {"median": 850}, "ratio_kubelet": 1.0588},
  {"scenario": "steady", "metric": "RSS", "unit": "MiB", "minikubelet": {"median": 40}}
 ]}`

const newRun = `{"machine": {"commit": "bbb222", "date": "2026-11-02T10:00:00Z", "loadavg_at_start": "0.50 0.30 0.20"},
 "results": [
  {"scenario": "start", "metric": "submit → started", "unit": "ms", "raw": {"median": 100}, "minikubelet": {"median": 99}, "ratio": 0.99},
  {"scenario": "manifest-start", "metric": "file → running", "unit": "ms", "minikubelet": {"median": 800}, "kubelet": {"median": 850}, "ratio_kubelet": 0.9412},
  {"scenario": "density", "metric": "pods/s", "unit": "1/s", "minikubelet": {"median": 3}}
 ]}`

func write(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCompare_RowsMatchedChangesAndRatios(t *testing.T) {
	dir := t.TempDir()
	o := write(t, dir, "20261101-1000-aaa111.json", oldRun)
	n := write(t, dir, "20261102-1000-bbb222.json", newRun)
	var out bytes.Buffer
	if err := run([]string{o, n}, &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"old: aaa111 (2026-11-01T10:00:00Z, load 0.40 0.30 0.20)",
		"new: bbb222",
		"| start | submit → started | ms | 110 | 99.0 | -10.0 % | 1.10 | 0.99 | – | – |",
		"| manifest-start | file → running | ms | 900 | 800 | -11.1 % | – | – | 1.06 | 0.94 |",
		"only in new: density pods/s",
		"only in old: steady RSS",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}

func TestCompare_PartialRunSaysSo(t *testing.T) {
	dir := t.TempDir()
	o := write(t, dir, "old.json", oldRun)
	n := write(t, dir, "new.json", strings.Replace(newRun, `"results"`, `"partial": "the bench's --timeout ran out", "results"`, 1))
	var out bytes.Buffer
	if err := run([]string{o, n}, &out); err != nil {
		t.Fatal(err)
	}
	if want := "new: bbb222 (2026-11-02T10:00:00Z, load 0.50 0.30 0.20); a partial run, ended early: the bench's --timeout ran out"; !strings.Contains(out.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, out.String())
	}
	if strings.Contains(out.String(), "old: aaa111 (2026-11-01T10:00:00Z, load 0.40 0.30 0.20);") {
		t.Errorf("the whole run is called partial:\n%s", out.String())
	}
}

func TestCompare_DirTakesTheTwoNewest(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "20261001-0900-zzz000.json", strings.ReplaceAll(oldRun, "aaa111", "zzz000"))
	write(t, dir, "20261101-1000-aaa111.json", oldRun)
	write(t, dir, "20261102-1000-bbb222.json", newRun)
	var out bytes.Buffer
	if err := run([]string{dir}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "old: aaa111") || strings.Contains(out.String(), "zzz000") {
		t.Fatalf("want the two newest (aaa111 → bbb222):\n%s", out.String())
	}
}

func TestCompare_BadInputSaysWhy(t *testing.T) {
	dir := t.TempDir()
	good := write(t, dir, "a.json", oldRun)
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"not json":   {[]string{good, write(t, dir, "b.json", "{")}, "not a bench result"},
		"no results": {[]string{good, write(t, dir, "c.json", `{"results": []}`)}, "no results"},
		"one run":    {[]string{t.TempDir()}, "compare needs two"},
		"no args":    {nil, "usage"},
	} {
		err := run(tc.args, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error with %q", name, err, tc.want)
		}
	}
}
