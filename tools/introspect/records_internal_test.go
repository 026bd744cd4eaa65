package introspect

import (
	"testing"

	"github.com/demiurge-dev/demiurge/world"
)

// TestRecordKindsMatchWorld: introspect reads the journal without importing
// world (tools never do); the record kinds it knows must be world's.
func TestRecordKindsMatchWorld(t *testing.T) {
	for _, c := range []struct{ ours, worlds string }{
		{recManifest, world.KindManifest},
		{recEvent, world.KindEvent},
		{recReceipt, world.KindReceipt},
		{recState, world.KindState},
	} {
		if c.ours != c.worlds {
			t.Errorf("introspect reads %q records, world writes %q", c.ours, c.worlds)
		}
	}
}
