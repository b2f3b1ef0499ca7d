package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// nmeterMain is the part of busybox's nmeter the node e2e specs use (the
// host's busybox lacks the applet; the real e2e busybox image has it):
// `nmeter -d0 '%3t' | head -n1` prints the time of day with milliseconds
// (test/e2e_node/container_lifecycle_pod_construction.go). It prints the
// format once per -d milliseconds (0: without pause; default 1000) until
// its output is closed. Of the format only literal text and %[N]t (the
// local time, hh:mm:ss with N digits of the second's fraction, 0-9) are
// known; another directive is refused.
func nmeterMain(args []string) int {
	delay := time.Second
	var format string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-d" && i+1 < len(args):
			i++
			a = "-d" + args[i]
			fallthrough
		case strings.HasPrefix(a, "-d"):
			ms, err := strconv.Atoi(strings.TrimPrefix(a, "-d"))
			if err != nil || ms < 0 {
				fmt.Fprintf(os.Stderr, "nmeter: -d %q: want milliseconds >= 0\n", strings.TrimPrefix(a, "-d"))
				return 1
			}
			delay = time.Duration(ms) * time.Millisecond
		case format == "" && !strings.HasPrefix(a, "-"):
			format = a
		default:
			fmt.Fprintf(os.Stderr, "nmeter: unsupported argument %q (this stand-in knows -d MSEC and a format of text and %%[N]t)\n", a)
			return 1
		}
	}
	if format == "" {
		fmt.Fprintln(os.Stderr, "usage: nmeter [-d MSEC] FORMAT")
		return 1
	}
	if _, err := nmeterLine(format, time.Time{}); err != nil {
		fmt.Fprintln(os.Stderr, "nmeter:", err)
		return 1
	}
	w := bufio.NewWriter(os.Stdout)
	for {
		line, _ := nmeterLine(format, time.Now())
		if _, err := w.WriteString(line + "\n"); err != nil {
			return 0
		}
		if err := w.Flush(); err != nil {
			return 0 // the reader (head -n1) is gone
		}
		time.Sleep(delay)
	}
}

// nmeterLine renders format at t.
func nmeterLine(format string, t time.Time) (string, error) {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		j := i + 1
		for j < len(format) && format[j] >= '0' && format[j] <= '9' {
			j++
		}
		if j >= len(format) {
			return "", fmt.Errorf("format %q ends inside a directive", format)
		}
		switch format[j] {
		case '%':
			b.WriteByte('%')
		case 't':
			digits := 0
			if j > i+1 {
				digits, _ = strconv.Atoi(format[i+1 : j])
			}
			if digits > 9 {
				return "", fmt.Errorf("%%%st: at most 9 digits", format[i+1:j])
			}
			layout := "15:04:05"
			if digits > 0 {
				layout += "." + strings.Repeat("0", digits)
			}
			b.WriteString(t.Format(layout))
		default:
			return "", fmt.Errorf("directive %%%c of %q is not supported by this stand-in (only %%[N]t)", format[j], format)
		}
		i = j
	}
	return b.String(), nil
}
