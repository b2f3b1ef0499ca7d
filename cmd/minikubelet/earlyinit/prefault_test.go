package earlyinit

import (
	"bufio"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/minikubelet/minikubelet/test/testutil"
)

func TestParseMapping(t *testing.T) {
	for _, tc := range []struct {
		line       string
		start, end uintptr
		perms      string
		path       string
		ok         bool
	}{
		{"00400000-012fb000 r-xp 00000000 fe:00 12345                      /usr/local/bin/minikubelet", 0x400000, 0x12fb000, "r-xp", "/usr/local/bin/minikubelet", true},
		// A path with spaces is the rest of the line.
		{"7f00aa000000-7f00aa001000 r--p 00001000 fe:00 7 /opt/my dir/minikubelet", 0x7f00aa000000, 0x7f00aa001000, "r--p", "/opt/my dir/minikubelet", true},
		// Anonymous: no path.
		{"c000000000-c000400000 rw-p 00000000 00:00 0 ", 0xc000000000, 0xc000400000, "rw-p", "", true},
		{"c000000000-c000400000 rw-p 00000000 00:00 0", 0xc000000000, 0xc000400000, "rw-p", "", true},
		{"", 0, 0, "", "", false},
		{"garbage", 0, 0, "", "", false},
		{"0400000-zz r-xp 0 fe:00 1 /x", 0, 0, "", "", false},
		{"2000-1000 r-xp 0 fe:00 1 /x", 0, 0, "", "", false}, // end before start
		{"11111111111111111-ffffffffffffffffff r-xp 0 fe:00 1 /x", 0, 0, "", "", false},
	} {
		start, end, perms, path, ok := parseMapping([]byte(tc.line))
		if ok != tc.ok || start != tc.start || end != tc.end || string(perms) != tc.perms || string(path) != tc.path {
			t.Errorf("parseMapping(%q) = %#x, %#x, %q, %q, %v; want %#x, %#x, %q, %q, %v",
				tc.line, start, end, perms, path, ok, tc.start, tc.end, tc.perms, tc.path, tc.ok)
		}
	}
}

func TestLines_DropsACutLastLine(t *testing.T) {
	var got []string
	for l := range lines([]byte("a b\n\nc\nunfinished")) {
		got = append(got, string(l))
	}
	if strings.Join(got, "|") != "a b||c" {
		t.Fatalf("lines = %q", got)
	}
}

// This test binary's init ran prefault: its code and read-only data, and
// only those, were populated, and the code is resident.
func TestPrefault_MapsTheExecutablesCode(t *testing.T) {
	if errors.Is(prefaultErr, syscall.EINVAL) {
		// Under CI=true this fails: CI's machines run a newer kernel.
		testutil.SkipSuite(t, "this kernel has no MADV_POPULATE_READ (Linux 5.14): start-up faults as before")
	}
	if prefaultErr != nil || populated == 0 {
		t.Fatalf("prefault populated %d bytes, err %v", populated, prefaultErr)
	}
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	inCode, size, rss := false, -1, -1
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 5 && strings.Contains(fields[0], "-") { // a mapping's first line
			inCode = len(fields) >= 6 && fields[1] == "r-xp" && strings.Join(fields[5:], " ") == exe
			continue
		}
		if inCode && len(fields) >= 2 {
			switch fields[0] {
			case "Size:":
				size, _ = strconv.Atoi(fields[1])
			case "Rss:":
				rss, _ = strconv.Atoi(fields[1])
			}
		}
	}
	if size <= 0 || rss < 0 {
		t.Fatalf("no r-xp mapping of %s in /proc/self/smaps", exe)
	}
	// The whole mapping, less what the kernel may have reclaimed since.
	if rss*10 < size*9 {
		t.Errorf("code mapping: %d of %d kB resident after prefault", rss, size)
	}
	// What it populated: the executable's code and read-only data, all
	// of them, and nothing writable.
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	var want uintptr
	for _, l := range strings.Split(string(maps), "\n") {
		f := strings.Fields(l)
		if len(f) < 6 || strings.Join(f[5:], " ") != exe || (f[1] != "r-xp" && f[1] != "r--p") {
			continue
		}
		lo, hi, _ := strings.Cut(f[0], "-")
		s, _ := strconv.ParseUint(lo, 16, 64)
		e, _ := strconv.ParseUint(hi, 16, 64)
		want += uintptr(e - s)
	}
	if populated != want || want < uintptr(size)<<10 {
		t.Errorf("populated %d bytes; the executable's read-only mappings are %d bytes (code %d kB)", populated, want, size)
	}
}
