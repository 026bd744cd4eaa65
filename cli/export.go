package cli

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/agent/session"
	"github.com/demiurge-dev/demiurge/replay"
	"github.com/demiurge-dev/demiurge/schema"
)

func newExportCommand(a *app) *cobra.Command {
	var wf worldFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "export [--world W] [--manifest M] DIR",
		Short: "Write a world's session as a portable bundle",
		Long: `Write world W (--world, default main) as a bundle in DIR (which must not
exist or be empty): its AIR, every journal record, and every blob the
records refer to. "demiurge replay DIR" and "demiurge trace DIR" read it
anywhere; "demiurge import DIR" loads it into a store. Opens the store
read-only.

The AIR is the manifest the world last ran, read from the store (a world
stores its manifest and every definition it pins when it records them),
written as one file, air/00-manifest.air.json. With --manifest M the AIR
files at M are written instead, as they are; M must load as the manifest
the world last ran. The WASM modules of its defmodules are written beside
the AIR (air/modules/<name>-<hex>.wasm), so that DIR/air is a world's
folder: "demiurge replay --under-manifest DIR" replays the session under
the AIR and modules as edited there.`,
		Example: `  demiurge export session
  demiurge export --world t1 --manifest examples/timer t1-session`,
		Args: wantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if err := wf.check(false); err != nil {
				return err
			}
			var cat *schema.Catalog
			if wf.manifest != "" {
				if cat, err = a.loadCatalog(wf.manifest); err != nil {
					return err
				}
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
				return fmt.Errorf("export: %w", noRecords(ctx, s, wf.world))
			}
			var sources []schema.Source
			if cat != nil {
				if ref != cat.ManifestRef().String() {
					return fmt.Errorf("export: world %s last ran manifest %s, but %s loads as %s; export with the AIR the world ran, or without --manifest", wf.world, ref, wf.manifest, cat.ManifestRef())
				}
				sources = cat.Sources()
			} else {
				if cat, err = a.storedCatalog(ctx, s, wf.world); err != nil {
					return fmt.Errorf("export: %w", err)
				}
				sources = storedSources(cat)
			}
			m, err := replay.Export(ctx, s.Journal(), s.CAS(), wf.world, sources, cat.ModuleFiles(), args[0])
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
			if asJSON {
				writeJSONLine(a.out, bundleJSON{World: wf.world, Dir: args[0], Records: int(m.Records), Blobs: m.Blobs, Head: session.Head{Seq: m.Head, Hash: m.HeadHash}})
				return nil
			}
			fmt.Fprintf(a.out, "exported world %s to %s: %s, %s, head %d\n", wf.world, args[0], plural(int(m.Records), "record"), plural(m.Blobs, "blob"), m.Head)
			return nil
		},
	}
	wf.add(cmd, "the AIR files to write (`PATH`; default: the manifest the world last ran, read from the store)")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print one JSON object: {"world", "dir", "records", "blobs", "head": {"seq", "hash"}}`)
	return cmd
}

func newImportCommand(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "import DIR",
		Short: "Load a session bundle into the store",
		Long: `Check the bundle in DIR (its hash chain and every blob's hash) and load its
records and blobs into the store, as the world the bundle names, which must
not exist in the store yet. The world's AIR is in DIR/air.`,
		Example: `  demiurge --store other import session
  demiurge --store other import testdata/sessions/demo`,
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
			if asJSON {
				var head session.Head
				if n := len(b.Records); n > 0 {
					head = session.Head{Seq: b.Records[n-1].Seq, Hash: b.Records[n-1].Hash.String()}
				}
				writeJSONLine(a.out, bundleJSON{World: b.Manifest.World, Dir: args[0], Records: len(b.Records), Blobs: len(b.Blobs), Head: head})
				return nil
			}
			fmt.Fprintf(a.out, "imported world %s: %s, %s\n", b.Manifest.World, plural(len(b.Records), "record"), plural(len(b.Blobs), "blob"))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print one JSON object: {"world", "dir", "records", "blobs", "head": {"seq", "hash"}}`)
	return cmd
}

// storedSources is the AIR of a catalog rebuilt from the store, as the one
// file a bundle carries: its defs and manifest in a JSON array, indented.
func storedSources(cat *schema.Catalog) []schema.Source {
	var out []schema.Source
	for _, src := range cat.Sources() {
		data := src.Data
		var b bytes.Buffer
		if json.Indent(&b, data, "", "  ") == nil {
			data = append(b.Bytes(), '\n')
		}
		out = append(out, schema.Source{Name: "manifest.air.json", Data: data})
	}
	return out
}

// bundleJSON is what export --json and import --json print: the world, the
// bundle's directory, how many records and blobs it holds, and the seq of
// its last record.
type bundleJSON struct {
	World   string       `json:"world"`
	Dir     string       `json:"dir"`
	Records int          `json:"records"`
	Blobs   int          `json:"blobs"`
	Head    session.Head `json:"head"`
}
