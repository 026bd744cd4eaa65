package main

// greet returns a greeting.
func greet(name string) string {
	return "hello, " + name // TODO: localize
}

func add(a, b int) int { return a + b }
