package demiurge_test

import (
	"os"
	"testing"

	"github.com/demiurge-dev/demiurge/reducer/demiurge"
)

func TestMain(m *testing.M) {
	demiurge.VerifyMemo = true // benchmarks run without it: see BenchmarkToolRound
	os.Exit(m.Run())
}
