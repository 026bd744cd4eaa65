package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/replay"
)

func newExportCommand(a *app) *cobra.Command {
	var wf worldFlags
	cmd := &cobra.Command{
		Use:   "export --world W --manifest M DIR",
		Short: "Write a world's session as a portable bundle",
		Long: `Write world W as a bundle in DIR (which must not exist or be empty): its AIR
(from M, which must be the manifest the world last ran), every journal
record, and every blob the records refer to. "demiurge replay DIR" and
"demiurge trace DIR" read it anywhere; "demiurge import DIR" loads it into a
store. Opens the store read-only.`,
		Args: wantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if err := wf.check(true); err != nil {
				return err
			}
			cat, err := loadCatalog(wf.manifest)
			if err != nil {
				return err
			}
			s, err := a.openStore(cmd.Context(), true)
			if err != nil {
				return err
			}
			defer closeStore(s, &err)
			defer func() { err = explainMissing(cmd.Context(), s, err) }()
			ctx := cmd.Context()
			ref, err := worldManifest(ctx, s.Journal(), wf.world)
			if err != nil {
				return err
			}
			if ref == "" {
				return fmt.Errorf("export: world %s has no records in store %s", wf.world, s.Dir())
			}
			if ref != cat.ManifestRef().String() {
				return fmt.Errorf("export: world %s last ran manifest %s, but %s loads as %s; export with the AIR the world ran", wf.world, ref, wf.manifest, cat.ManifestRef())
			}
			m, err := replay.Export(ctx, s.Journal(), s.CAS(), wf.world, cat.Sources(), args[0])
			if err != nil {
				return err
			}
			// Refs the store does not hold may name things outside it; on a
			// damaged file they may be blobs a damaged page hides.
			if m.Missing > 0 {
				if ferr := checkFile(ctx, s); ferr != nil {
					return fmt.Errorf("export: %d refs the records name are not in the store, whose file is damaged (the bundle in %s lacks them): %w", m.Missing, args[0], ferr)
				}
			}
			fmt.Fprintf(a.out, "exported world %s to %s: %s, %s, head %d\n", wf.world, args[0], plural(int(m.Records), "record"), plural(m.Blobs, "blob"), m.Head)
			return nil
		},
	}
	wf.add(cmd, "the AIR the world runs (`PATH`)")
	return cmd
}

func newImportCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import DIR",
		Short: "Load a session bundle into the store",
		Long: `Check the bundle in DIR (its hash chain and every blob's hash) and load its
records and blobs into the store, as the world the bundle names, which must
not exist in the store yet. The world's AIR is in DIR/air.`,
		Args: wantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			b, err := replay.Read(args[0])
			if err != nil {
				return err
			}
			s, err := a.openStore(cmd.Context(), false)
			if err != nil {
				return err
			}
			defer closeStore(s, &err)
			if err := replay.Import(cmd.Context(), b, s.Journal(), s.CAS()); err != nil {
				return err
			}
			fmt.Fprintf(a.out, "imported world %s: %s, %s\n", b.Manifest.World, plural(len(b.Records), "record"), plural(len(b.Blobs), "blob"))
			return nil
		},
	}
	return cmd
}
