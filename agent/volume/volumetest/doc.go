// Package volumetest holds agent/volume's fake for the tests of the
// packages that use it: FakeMounter, a VolumeMounter that records tmpfs and
// bind mounts instead of mounting (house style rule 12), and ReadVolume,
// which reads the user-visible files of a volume the atomic writer wrote.
// It imports agent/volume and nothing else of the repository; only tests
// import it.
package volumetest
