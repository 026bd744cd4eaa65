package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/internal/store"
)

func newRecoverCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "recover",
		Short: "Make a store with a damaged meta page usable again, going back to its older state",
		Long: `A bbolt file has two meta pages, each naming the state of the file after a
commit: the newer one and the one before. When one of them is damaged (zeroed,
overwritten), every command refuses the store, saying which page and what would
be lost: bbolt would silently go on from the other one, an older state, and the
last commit would be gone without a word (and the next write would make it so
for good, sending again the model call it recorded, say).

recover goes on from that older state when you choose to: it keeps a copy of
the file as it is (demiurge.db.damaged-TIME, beside it), checks the older
state page by page, and writes both meta pages anew. What the damaged page held
after it is lost: at most the last commit (a step of a world: a message, a
receipt). A store damaged elsewhere too is refused and left as it was; one
whose meta pages are whole is left alone. It needs the store to itself, as a
command that writes does. Restoring the file from a backup, if you have one
newer than the damage, loses nothing.`,
		Example: `  demiurge recover
  demiurge --store backup/.demiurge recover`,
		Args: wantArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			a.usedStore = true
			rec, err := store.Recover(a.storeDir, 0)
			if errors.Is(err, cas.ErrNoMetaDamage) {
				fmt.Fprintf(a.out, "nothing to recover: the meta pages of the store in %s are whole (demiurge cas verify checks the rest)\n", a.storeName())
				return nil
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(a.out, "recovered the store in %s: it goes on from transaction %d\n", a.storeName(), rec.Txid)
			fmt.Fprintf(a.out, "the damage: %s\n", rec.Damage.Detail)
			fmt.Fprintf(a.out, "the damaged file as it was: %s\n", rec.Kept)
			fmt.Fprintf(a.out, "check it: demiurge journal verify; demiurge cas verify\n")
			return nil
		},
	}
}
