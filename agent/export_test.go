package agent

// SetTurnStartedHook sets the hook a turn's stream runs once its turn has
// started (testHookStarted) until the test ends.
func SetTurnStartedHook(cleanup func(func()), f func(*Chat)) {
	testHookStarted.Store(&f)
	cleanup(func() { testHookStarted.Store(nil) })
}

// SetRegisteredHook sets the hook a turn's stream runs once its follower
// is registered, before it reads the chat's state (testHookRegistered),
// until the test ends.
func SetRegisteredHook(cleanup func(func()), f func(*Chat)) {
	testHookRegistered.Store(&f)
	cleanup(func() { testHookRegistered.Store(nil) })
}
