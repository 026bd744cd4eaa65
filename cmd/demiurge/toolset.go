package main

import (
	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/introspect"
	"github.com/demiurge-dev/demiurge/world"
)

// worldTools returns the tools a model (and demiurge sh) has in world w:
// the introspect tools reading w. They are the commands of the bash tool
// and, each by itself, tools of the model. The workspace tools join them
// once tools/workspace provides them.
func worldTools(w *world.World) ([]tools.Tool, error) {
	return introspect.Tools(introspect.FromWorld(w), nil), nil
}
