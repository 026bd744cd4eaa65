package coreutils

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// gzipCmd compresses or expands files: gzip [-c -d -k -f -t -l -q -v -1..-9
// -n -N] [-S SUF] [FILE]...; gunzip is gzip -d and zcat gzip -dc. Without
// -c, FILE becomes FILE.gz (and back), the original removed unless -k.
// Expanding reads concatenated members as one stream, as gzip does.
func gzipCmd(c *cmd, args []string) int {
	return c.gzipRun(args, false, false)
}

func gunzipCmd(c *cmd, args []string) int { return c.gzipRun(args, true, false) }

func zcatCmd(c *cmd, args []string) int { return c.gzipRun(args, true, true) }

func (c *cmd) gzipRun(args []string, decompress, toStdout bool) int {
	keep, force, test, list, quiet, verbose := false, false, false, false, false, false
	level := gzip.DefaultCompression
	suffix := ".gz"
	files, st, ok := c.flags(args, "S", 1, func(f, v string) error {
		switch f {
		case "-c", "--stdout", "--to-stdout":
			toStdout = true
		case "-d", "--decompress", "--uncompress":
			decompress = true
		case "-k", "--keep":
			keep = true
		case "-f", "--force":
			force = true
		case "-t", "--test":
			test, decompress = true, true
		case "-l", "--list":
			list = true
		case "-q", "--quiet":
			quiet = true
		case "-v", "--verbose":
			verbose = true
		case "-n", "--no-name", "-N", "--name", "-r", "--recursive", "--rsyncable", "--no-rsyncable":
		case "-S", "--suffix":
			if v == "" {
				return errors.New("invalid suffix ''")
			}
			suffix = v
		case "--fast":
			level = 1
		case "--best":
			level = 9
		default:
			if len(f) == 2 && f[1] >= '1' && f[1] <= '9' {
				level = int(f[1] - '0')
				return nil
			}
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	_ = quiet
	if len(files) == 0 {
		files = []string{"-"}
	}
	status := 0
	var lt gzipTotals
	defer func() {
		if lt.files > 1 {
			fmt.Fprintf(c.out, "%*d %*d %s %s\n", 19, lt.comp, 19, lt.orig, gzipRatioN(lt.orig, lt.deflated), "(totals)")
		}
	}()
	for _, f := range files {
		if c.stopped() {
			return c.errf(1, "interrupted")
		}
		if !isStdin(f) && c.env.FS == nil {
			return c.noFS(1, f)
		}
		if list {
			if s := c.gzipList(f, suffix, &lt); s > status {
				status = s
			}
			continue
		}
		var data []byte
		var err error
		if isStdin(f) {
			data, err = c.readAll()
			if err != nil {
				return c.readErr(err)
			}
		} else {
			if info, serr := c.env.FS.Stat(c.ctx, c.abs(f)); serr == nil && info.IsDir() {
				c.errf(1, "%s is a directory -- ignored", f)
				status = max(status, 2)
				continue
			}
			if decompress && !strings.HasSuffix(f, suffix) && !toStdout && !test {
				if _, serr := c.env.FS.Stat(c.ctx, c.abs(f+suffix)); serr == nil {
					f += suffix
				} else {
					c.errf(1, "%s: unknown suffix -- ignored", f)
					status = max(status, 2)
					continue
				}
			}
			if !decompress && strings.HasSuffix(f, suffix) && !toStdout && !force {
				c.errf(1, "%s already has %s suffix -- unchanged", f, suffix)
				status = max(status, 2)
				continue
			}
			data, err = c.readFile(f)
			if err != nil {
				c.fileErr(1, f, err)
				status = 1
				continue
			}
		}
		var out []byte
		if decompress {
			out, err = c.gunzipBytes(data)
			if err != nil {
				name := f
				if isStdin(f) {
					name = "stdin"
				}
				if c.stopped() {
					return c.errf(1, "interrupted")
				}
				c.errf(1, "%s: %v", name, err)
				status = 1
				continue
			}
			if test {
				continue
			}
		} else {
			var b bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&b, level)
			if !isStdin(f) {
				// As gzip, the member keeps the file's name and time.
				zw.Name = path.Base(f)
				if info, serr := c.env.FS.Stat(c.ctx, c.abs(f)); serr == nil {
					zw.ModTime = info.ModTime()
				}
			}
			zw.Write(data)
			zw.Close()
			out = b.Bytes()
		}
		if toStdout || isStdin(f) {
			c.out.Write(out)
			continue
		}
		dst := f + suffix
		if decompress {
			dst = strings.TrimSuffix(f, suffix)
		}
		if !force {
			if _, serr := c.env.FS.Stat(c.ctx, c.abs(dst)); serr == nil {
				c.errf(1, "%s already exists; not overwritten", dst)
				status = max(status, 2)
				continue
			}
		}
		if !c.writeFile(dst, out) {
			status = 1
			continue
		}
		if verbose {
			fmt.Fprintf(c.env.Stderr, "%s:\t%s -- replaced with %s\n", f, gzipRatio(data, out, decompress), dst)
		}
		if !keep {
			if err := c.env.FS.Remove(c.ctx, c.abs(f), false); err != nil {
				c.fileErr(1, f, err)
				status = 1
			}
		}
	}
	return c.done(status)
}

// gunzipBytes expands data, within the command's output bound when it has
// one and the sandbox's file size otherwise.
func (c *cmd) gunzipBytes(data []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, errors.New("not in gzip format")
	}
	limit := int64(1 << 30)
	if c.env.FS != nil {
		if l := c.env.FS.Limits().MaxFileBytes; l > 0 {
			limit = l
		}
	}
	if c.env.MaxOutputBytes > 0 && c.env.MaxOutputBytes > limit {
		limit = c.env.MaxOutputBytes
	}
	var b bytes.Buffer
	n, err := io.Copy(&b, io.LimitReader(&ctxReader{c: c, r: zr}, limit+1))
	if err != nil {
		if errors.Is(err, gzip.ErrChecksum) {
			return nil, errors.New("invalid compressed data--crc error")
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, errors.New("unexpected end of file")
		}
		return nil, errors.New("invalid compressed data--format violated")
	}
	if n > limit {
		return nil, fmt.Errorf("expands beyond %d bytes", limit)
	}
	return b.Bytes(), nil
}

// ctxReader stops a long read once the command is stopped.
type ctxReader struct {
	c *cmd
	r io.Reader
}

func (r *ctxReader) Read(p []byte) (int, error) {
	if r.c.stopped() {
		return 0, errStopped
	}
	return r.r.Read(p)
}

// gzipRatio is gzip -v's saving, "66.7%".
func gzipRatio(in, out []byte, decompress bool) string {
	orig, comp := len(in), len(out)
	if decompress {
		orig, comp = comp, orig
	}
	return gzipRatioN(int64(orig), int64(comp))
}

func gzipRatioN(orig, comp int64) string {
	if orig == 0 {
		return "  0.0%"
	}
	return fmt.Sprintf("%5.1f%%", 100*(1-float64(comp)/float64(orig)))
}

// gzipTotals adds up gzip -l's files.
type gzipTotals struct {
	files, comp, orig, deflated int64
}

// gzipList prints gzip -l's line for one file.
func (c *cmd) gzipList(f, suffix string, lt *gzipTotals) int {
	data, err := c.readFile(f)
	if err != nil {
		c.fileErr(1, f, err)
		return 1
	}
	out, err := c.gunzipBytes(data)
	if err != nil {
		c.errf(1, "%s: %v", f, err)
		return 1
	}
	name := strings.TrimSuffix(f, suffix)
	// The ratio is of the deflated bytes, without the member's header
	// and trailer, as gzip -l gives it.
	overhead := 18
	if zr, err := gzip.NewReader(bytes.NewReader(data)); err == nil {
		if zr.Name != "" {
			overhead += len(zr.Name) + 1
		}
		if zr.Comment != "" {
			overhead += len(zr.Comment) + 1
		}
	}
	if lt.files == 0 {
		fmt.Fprintf(c.out, "%*s %*s %s %s\n", 19, "compressed", 19, "uncompressed", " ratio", "uncompressed_name")
	}
	deflated := max(len(data)-overhead, 0)
	lt.files++
	lt.comp += int64(len(data))
	lt.orig += int64(len(out))
	lt.deflated += int64(deflated)
	fmt.Fprintf(c.out, "%*d %*d %s %s\n", 19, len(data), 19, len(out), gzipRatioN(int64(len(out)), int64(deflated)), name)
	return 0
}
