package bash

import (
	"slices"

	"github.com/demiurge-dev/demiurge/tools/bash/internal/coreutils"
	"github.com/demiurge-dev/demiurge/tools/bash/internal/shell"
)

// maxShellDepth bounds nested shells (bash -c inside bash -c ...).
const maxShellDepth = 16

// sandboxCommands lists every command of the sandbox that is not a tool:
// utilities, shells and builtins, sorted.
func sandboxCommands() []string {
	names := append(coreutils.Names(), shell.Builtins()...)
	names = append(names, "which", "egrep", "fgrep", "help", "discover")
	slices.Sort(names)
	return slices.Compact(names)
}
