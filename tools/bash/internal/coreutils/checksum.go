package coreutils

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"strings"
)

// hashCmd prints or checks checksums: sha256sum, sha1sum, sha512sum,
// md5sum [-c] [--quiet] [--status] [FILE]...
func hashCmd(newHash func() hash.Hash) impl {
	return func(c *cmd, args []string) int {
		check, quiet, status := false, false, false
		files, st, ok := c.flags(args, "", 1, func(f, _ string) error {
			switch f {
			case "-c", "--check":
				check = true
			case "--quiet":
				quiet = true
			case "--status":
				status = true
			case "-b", "-t", "--binary", "--text", "--tag", "-z", "--strict", "-w", "--warn":
			default:
				return errUnknownFlag
			}
			return nil
		})
		if !ok {
			return st
		}
		if len(files) == 0 {
			files = []string{"-"}
		}
		sum := func(r io.Reader) (string, error) {
			h := newHash()
			if _, err := io.Copy(h, r); err != nil {
				return "", err
			}
			return hex.EncodeToString(h.Sum(nil)), nil
		}
		if !check {
			code := 0
			for _, f := range files {
				r, err := c.openInput(f)
				if err != nil {
					c.fileErr(1, f, err)
					code = 1
					continue
				}
				s, err := sum(r)
				if err != nil {
					return c.readErr(err)
				}
				c.out.WriteString(s + "  " + f + "\n")
			}
			return c.done(code)
		}
		code, bad := 0, 0
		for _, f := range files {
			lines, ok := c.readLines(f)
			if !ok {
				code = 1
				continue
			}
			for _, l := range lines {
				want, name, found := strings.Cut(l, "  ")
				if !found {
					want, name, found = strings.Cut(l, " *")
				}
				if !found {
					continue
				}
				r, err := c.openInput(name)
				got := ""
				if err == nil {
					got, err = sum(r)
				}
				switch {
				case err != nil:
					if !status {
						c.out.WriteString(name + ": FAILED open or read\n")
					}
					bad++
				case got != strings.ToLower(want):
					if !status {
						c.out.WriteString(name + ": FAILED\n")
					}
					bad++
				case !quiet && !status:
					c.out.WriteString(name + ": OK\n")
				}
			}
		}
		if bad > 0 {
			if !status {
				c.out.Flush()
				plural := "s"
				if bad == 1 {
					plural = ""
				}
				fmt.Fprintf(c.env.Stderr, "%s: WARNING: %d computed checksum%s did NOT match\n", c.name, bad, plural)
			}
			code = 1
		}
		return c.done(code)
	}
}

var (
	sha256Cmd = hashCmd(sha256.New)
	sha1Cmd   = hashCmd(sha1.New)
	sha512Cmd = hashCmd(sha512.New)
	md5Cmd    = hashCmd(md5.New)
)
