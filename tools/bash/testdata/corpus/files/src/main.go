package main

import "fmt"

// TODO: read flags
func main() {
	fmt.Println(greet("world"))
}
