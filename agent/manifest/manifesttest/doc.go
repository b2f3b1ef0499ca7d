// Package manifesttest holds what the tests of agent/manifest and of the
// packages that consume decoded manifests (agent/source, agent) share: the
// "located problem" check the fuzz targets hold every refusal to, the
// test node name, and a pod as the API decodes it (APIPod). It imports agent/manifest and nothing else of the
// repository; only tests import it.
package manifesttest
