package cli

// lookupEnv turns a command's getenv into a lookup: an empty variable is
// unset.
func lookupEnv(getenv func(string) string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v := getenv(k)
		return v, v != ""
	}
}
