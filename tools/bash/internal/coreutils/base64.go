package coreutils

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
)

// base64Cmd encodes or decodes stdin: base64 [-d] [-i] [-w COLS].
func base64Cmd(c *cmd, args []string) int {
	decode, ignore := false, false
	wrap := 76
	if st, ok := c.stdinFlags(args, "w", 1, func(f, v string) error {
		switch f {
		case "-d", "-D", "--decode":
			decode = true
		case "-i", "--ignore-garbage":
			ignore = true
		case "-w", "--wrap":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return fmt.Errorf("invalid wrap size: '%s'", v)
			}
			wrap = n
		default:
			return errUnknownFlag
		}
		return nil
	}); !ok {
		return st
	}
	data, err := c.readAll()
	if err != nil {
		return c.readErr(err)
	}
	if decode {
		clean := make([]byte, 0, len(data))
		for _, b := range data {
			switch {
			case b >= 'A' && b <= 'Z', b >= 'a' && b <= 'z', b >= '0' && b <= '9', b == '+', b == '/', b == '=':
				clean = append(clean, b)
			case b == '\n' || b == '\r' || b == ' ' || b == '\t' || ignore:
			default:
				return c.errf(1, "invalid input")
			}
		}
		out, err := base64.StdEncoding.DecodeString(string(clean))
		if err != nil {
			out, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(string(clean), "="))
			if err != nil {
				return c.errf(1, "invalid input")
			}
		}
		c.out.Write(out)
		return c.done(0)
	}
	enc := base64.StdEncoding.EncodeToString(data)
	if wrap == 0 {
		c.out.WriteString(enc)
		if enc != "" {
			c.out.WriteByte('\n')
		}
		return c.done(0)
	}
	for len(enc) > 0 {
		n := min(wrap, len(enc))
		c.out.WriteString(enc[:n])
		c.out.WriteByte('\n')
		enc = enc[n:]
	}
	return c.done(0)
}
