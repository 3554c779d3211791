// The upstream CRDs the tests read (config/components/crd/bases of each module), at pinned
// versions: Kueue's is the oracle's (RFC-0033 runs v0.19.2), JobSet's the newest release
// the module proxy serves. Nothing here is built; `go mod download -json` finds the files.
module tpu-admission/tests/crds

go 1.26

require (
	sigs.k8s.io/jobset v0.12.0
	sigs.k8s.io/kueue v0.19.2
)
