package podevents

import "time"

// Step is one completed link of the startup chain of a pod (sandbox and
// network, image, create, start, running), with the time it took. The run
// command prints them; describe (issue #6) shows them as the startup trace.
type Step struct {
	Name     string
	Duration time.Duration
	Detail   string
	At       time.Time
}

// Startup chain step names.
const (
	StepSandbox = "sandbox"
	StepImage   = "image"
	StepCreated = "created"
	StepStarted = "started"
	StepRunning = "running"
	StepReady   = "ready"
	StepKilled  = "stopped"
	StepRemoved = "removed"
)
