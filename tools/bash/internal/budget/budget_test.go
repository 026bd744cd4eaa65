package budget

import (
	"errors"
	"sync"
	"testing"
)

func TestBudget(t *testing.T) {
	var exceeded []error
	b := New(100, func(err error) { exceeded = append(exceeded, err) })
	if err := b.Charge(60); err != nil {
		t.Fatal(err)
	}
	if err := b.Check(40); err != nil {
		t.Errorf("Check(40) at 60 of 100: %v", err)
	}
	err := b.Charge(41)
	var ee *ExceededError
	if !errors.As(err, &ee) || ee.Limit != 100 || err.Error() != "memory budget exceeded (100 bytes)" {
		t.Fatalf("Charge past the limit = %v", err)
	}
	if b.Used() != 60 {
		t.Errorf("a failed charge charged: used %d", b.Used())
	}
	b.Charge(1000)
	if len(exceeded) != 1 || !b.Exceeded() {
		t.Errorf("onExceed called %d times; want once", len(exceeded))
	}
	b.Release(60)
	if b.Used() != 0 || b.Peak() != 60 {
		t.Errorf("used %d peak %d; want 0 and 60", b.Used(), b.Peak())
	}
}

func TestMeter(t *testing.T) {
	b := New(100, nil)
	m := b.NewMeter()
	if err := m.Grow(30); err != nil {
		t.Fatal(err)
	}
	if err := m.Set(80); err != nil || b.Used() != 80 {
		t.Fatalf("Set(80): %v, used %d", err, b.Used())
	}
	if err := m.Set(200); err == nil || m.Held() != 80 {
		t.Errorf("Set past the budget: %v, held %d", err, m.Held())
	}
	m.Set(10)
	m.Close()
	if b.Used() != 0 || m.Held() != 0 {
		t.Errorf("after Close: used %d held %d", b.Used(), m.Held())
	}
}

func TestNilBudget(t *testing.T) {
	var b *Budget
	if b.Charge(1<<40) != nil || b.Check(1<<40) != nil || b.Used() != 0 || b.Limit() != 0 {
		t.Error("a nil budget is not unlimited")
	}
	m := b.NewMeter()
	if m.Grow(1<<40) != nil {
		t.Error("a nil budget's meter fails")
	}
	m.Close()
}

func TestConcurrent(t *testing.T) {
	b := New(1000, nil)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				if b.Charge(1) == nil {
					b.Release(1)
				}
			}
		})
	}
	wg.Wait()
	if b.Used() != 0 || b.Peak() > 8 {
		t.Errorf("used %d peak %d", b.Used(), b.Peak())
	}
}
