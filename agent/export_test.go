package agent

// SetTurnStartedHook sets the hook a turn's stream runs once its turn has
// started (testHookStarted) until the test ends.
func SetTurnStartedHook(cleanup func(func()), f func(*Chat)) {
	testHookStarted.Store(&f)
	cleanup(func() { testHookStarted.Store(nil) })
}
