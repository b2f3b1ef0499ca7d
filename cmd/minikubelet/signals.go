package main

import (
	"os"
	"os/signal"
	"syscall"
)

// notifySignals relays SIGINT and SIGTERM to ch.
func notifySignals(ch chan<- os.Signal) {
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
}
