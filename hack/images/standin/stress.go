package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// stressMain takes both polinux/stress's flags (--cpu N, --vm N,
// --vm-bytes B, --vm-hang S, --timeout S) and vish/stress's (-cpus N):
// CPU hogs spin; each VM hog maps --vm-bytes of anonymous memory, touches
// every page, holds it --vm-hang seconds (0 = forever), unmaps it and
// starts again, as stress does.
func stressMain(args []string) int {
	fs := flag.NewFlagSet("stress", flag.ContinueOnError)
	cpu := fs.Int("cpu", 0, "spawn N workers spinning on sqrt()")
	cpus := fs.Int("cpus", 0, "vish/stress: number of CPUs to burn")
	vm := fs.Int("vm", 0, "spawn N workers spinning on mmap/touch/munmap")
	vmBytes := fs.String("vm-bytes", "256M", "bytes per vm worker (suffix B, K, M, G)")
	vmHang := fs.Int("vm-hang", -1, "sleep N secs before free (0 = forever)")
	timeout := fs.Int("timeout", 0, "exit after N seconds")
	fs.Bool("verbose", false, "ignored")
	fs.Bool("v", false, "ignored")
	fs.String("mem-total", "", "vish/stress: ignored")
	fs.Bool("logtostderr", false, "vish/stress: ignored")
	if err := fs.Parse(args); err != nil {
		return 1
	}
	size, err := parseBytes(*vmBytes)
	if err != nil {
		fmt.Fprintf(os.Stderr, "stress: FAIL: [1] invalid --vm-bytes %q: %v\n", *vmBytes, err)
		return 1
	}
	hogs := *cpu + *cpus
	if hogs == 0 && *vm == 0 {
		fmt.Fprintln(os.Stderr, "stress: FAIL: [1] no hogs (minikubelet stand-in: --cpu, --vm, -cpus)")
		return 1
	}
	fmt.Printf("stress: info: [1] dispatching hogs: %d cpu, 0 io, %d vm, 0 hdd\n", hogs, *vm)
	for i := 0; i < hogs; i++ {
		go spin()
	}
	for i := 0; i < *vm; i++ {
		go vmHog(size, *vmHang)
	}
	var deadline <-chan time.Time
	if *timeout > 0 {
		deadline = time.After(time.Duration(*timeout) * time.Second)
	}
	select {
	case <-deadline:
		fmt.Printf("stress: info: [1] successful run completed in %ds\n", *timeout)
	case sig := <-stopSignals():
		fmt.Printf("stress: info: [1] %v received, exiting\n", sig)
	}
	return 0
}

func spin() {
	x := 0.0
	for {
		x = math.Sqrt(x + 1)
	}
}

// vmHog allocates, touches and holds size bytes in a loop.
func vmHog(size int64, hang int) {
	page := int64(os.Getpagesize())
	for {
		b, err := syscall.Mmap(-1, 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS)
		if err != nil {
			fmt.Fprintf(os.Stderr, "stress: FAIL: [1] mmap %d bytes: %v\n", size, err)
			os.Exit(1)
		}
		for i := int64(0); i < size; i += page {
			b[i] = 'Z'
		}
		switch {
		case hang == 0:
			select {}
		case hang > 0:
			time.Sleep(time.Duration(hang) * time.Second)
		}
		_ = syscall.Munmap(b)
	}
}

// parseBytes reads stress's sizes: a number with an optional B, K, M or G
// suffix (powers of 1024).
func parseBytes(s string) (int64, error) {
	if s == "" {
		return 0, fmt.Errorf("empty size")
	}
	mult := int64(1)
	switch strings.ToUpper(s[len(s)-1:]) {
	case "B":
		s = s[:len(s)-1]
	case "K":
		mult, s = 1<<10, s[:len(s)-1]
	case "M":
		mult, s = 1<<20, s[:len(s)-1]
	case "G":
		mult, s = 1<<30, s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("want a positive size")
	}
	return n * mult, nil
}
