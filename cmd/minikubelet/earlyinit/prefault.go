package earlyinit

import (
	"syscall"
	"unsafe"
)

// madvPopulateRead is MADV_POPULATE_READ (Linux 5.14): map the range's
// pages, reading them in if needed, without a fault per page.
const madvPopulateRead = 22

// What the last prefault did, for its test: the bytes it populated, and
// why it stopped early.
var (
	populated   uintptr
	prefaultErr error
)

// prefault maps the executable's code and read-only data in one call per
// mapping before the other packages initialize. Left to faults, start-up
// maps them about 64 KiB at a time: some 320 faults for `minikubelet
// version` alone, each one an exception the kernel's page table isolation
// and the VM make costly (about 30 µs apiece on the AMD VM of
// docs/performance.md, where touching every page of the binary took 21–28
// ms and populating it 1.1–1.5 ms). The daemon unmaps these pages again
// when it serves (serve.go), and any other command still running 10 s
// later (main.go), so what stays resident is what runs. Kernels without
// the advice refuse it (EINVAL) and start-up faults as before; any other
// failure is ignored too: this only saves time.
func prefault() {
	populated, prefaultErr = 0, nil
	fd, err := syscall.Open("/proc/self/maps", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		prefaultErr = err
		return
	}
	defer syscall.Close(fd)
	// A Go process this early has a few dozen mappings, the executable's
	// among the first: 8 KiB holds them.
	var buf [8 << 10]byte
	n := 0
	for n < len(buf) {
		m, err := syscall.Read(fd, buf[n:])
		if err != nil || m <= 0 {
			break
		}
		n += m
	}
	var exeBuf [4096]byte
	m, err := syscall.Readlink("/proc/self/exe", exeBuf[:])
	if err != nil {
		prefaultErr = err
		return
	}
	exe := string(exeBuf[:m])
	for line := range lines(buf[:n]) {
		start, end, ok := ReadOnlyMapping(line, exe)
		if !ok {
			continue
		}
		if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, start, end-start, madvPopulateRead); e != 0 {
			prefaultErr = e
			return
		}
		populated += end - start
	}
}

// ReadOnlyMapping parses one line of /proc/self/maps and reports the
// address range of a private, read-only mapping of the file exe: its code
// (r-xp) or read-only data (r--p), never the writable data (populating it
// would not be shared; dropping it would reset initialized globals) nor a
// shared mapping. The daemon's page drop (serve_pages.go) uses it too.
func ReadOnlyMapping(line []byte, exe string) (lo, hi uintptr, ok bool) {
	start, end, perms, path, ok := parseMapping(line)
	if !ok || string(path) != exe || perms[0] != 'r' || perms[1] != '-' || perms[3] != 'p' {
		return 0, 0, false
	}
	return start, end, true
}

// lines yields buf's newline-terminated lines, without the newline; a last
// line cut by the buffer's end is dropped.
func lines(buf []byte) func(func([]byte) bool) {
	return func(yield func([]byte) bool) {
		for i := 0; i < len(buf); {
			j := i
			for j < len(buf) && buf[j] != '\n' {
				j++
			}
			if j == len(buf) || !yield(buf[i:j]) {
				return
			}
			i = j + 1
		}
	}
}

// parseMapping reads one /proc/<pid>/maps line: "start-end perms offset
// dev inode path".
func parseMapping(line []byte) (start, end uintptr, perms, path []byte, ok bool) {
	fields := [6][]byte{}
	f := 0
	for i := 0; i < len(line) && f < 6; {
		for i < len(line) && line[i] == ' ' {
			i++
		}
		j := i
		for j < len(line) && (line[j] != ' ' || f == 5) {
			j++
		}
		if j > i {
			fields[f] = line[i:j]
			f++
		}
		i = j
	}
	if f < 5 {
		return 0, 0, nil, nil, false
	}
	addr := fields[0]
	dash := 0
	for dash < len(addr) && addr[dash] != '-' {
		dash++
	}
	s, ok1 := hex(addr[:dash])
	e, ok2 := hex(addr[min(dash+1, len(addr)):])
	if !ok1 || !ok2 || e <= s || len(fields[1]) < 4 {
		return 0, 0, nil, nil, false
	}
	return s, e, fields[1], fields[5], true
}

func hex(b []byte) (uintptr, bool) {
	if len(b) == 0 || len(b) > 2*int(unsafe.Sizeof(uintptr(0))) {
		return 0, false
	}
	var v uintptr
	for _, c := range b {
		switch {
		case '0' <= c && c <= '9':
			v = v<<4 | uintptr(c-'0')
		case 'a' <= c && c <= 'f':
			v = v<<4 | uintptr(c-'a'+10)
		default:
			return 0, false
		}
	}
	return v, true
}
