package cas_test

import (
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/cas/castest"
)

func TestMemory(t *testing.T) {
	castest.TestOpt(t, func(t *testing.T) cas.Store { return cas.NewMemory() }, castest.Options{
		Corrupt: func(t *testing.T, s cas.Store, ref cas.Ref) { cas.CorruptMemory(s.(*cas.Memory), ref) },
	})
}

func TestMemoryLen(t *testing.T) {
	m := cas.NewMemory()
	defer m.Close()
	for _, s := range []string{"a", "b", "a", ""} {
		if _, err := m.Put(t.Context(), []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if m.Len() != 3 {
		t.Errorf("Len = %d; want 3", m.Len())
	}
}
