package replay

// ReadFS exposes readFS to the fuzz test, which reads bundles from memory.
var ReadFS = readFS
