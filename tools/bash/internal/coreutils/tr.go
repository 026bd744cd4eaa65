package coreutils

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/demiurge-dev/demiurge/tools/bash/internal/escape"
)

// expandTrSet expands a tr set: ranges a-z, classes [:lower:] etc. and
// escapes \n \t \\ \NNN.
func expandTrSet(s string) ([]rune, error) {
	var out []rune
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		if r == '[' && i+1 < len(rs) && rs[i+1] == ':' {
			end := strings.Index(string(rs[i:]), ":]")
			if end > 0 {
				class := string(rs[i+2 : i+end])
				f, ok := trClasses[class]
				if !ok {
					return nil, fmt.Errorf("invalid character class '%s'", class)
				}
				for c := rune(0); c < 128; c++ {
					if f(c) {
						out = append(out, c)
					}
				}
				i += end + 1
				continue
			}
		}
		if r == '\\' && i+1 < len(rs) {
			i++
			switch rs[i] {
			case 'n':
				r = '\n'
			case 't':
				r = '\t'
			case 'r':
				r = '\r'
			case '\\':
				r = '\\'
			case '0', '1', '2', '3', '4', '5', '6', '7':
				v, k := 0, i
				for ; k < len(rs) && k < i+3 && rs[k] >= '0' && rs[k] <= '7'; k++ {
					v = v*8 + int(rs[k]-'0')
				}
				r = rune(v)
				i = k - 1
			default:
				r = rs[i]
			}
		}
		if i+2 < len(rs) && rs[i+1] == '-' {
			hi := rs[i+2]
			if hi < r {
				return nil, fmt.Errorf("range-endpoints of '%c-%c' are in reverse collating sequence order", r, hi)
			}
			if hi-r > 1<<16 {
				return nil, fmt.Errorf("range '%c-%c' is too large", r, hi)
			}
			for c := r; c <= hi; c++ {
				out = append(out, c)
			}
			i += 2
			continue
		}
		out = append(out, r)
	}
	return out, nil
}

var trClasses = map[string]func(rune) bool{
	"lower":  unicode.IsLower,
	"upper":  unicode.IsUpper,
	"digit":  unicode.IsDigit,
	"alpha":  unicode.IsLetter,
	"alnum":  func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) },
	"space":  unicode.IsSpace,
	"blank":  func(r rune) bool { return r == ' ' || r == '\t' },
	"punct":  func(r rune) bool { return r < 128 && unicode.IsPunct(r) || r < 128 && unicode.IsSymbol(r) },
	"xdigit": func(r rune) bool { return r < 128 && escape.IsHex(byte(r)) },
	"cntrl":  unicode.IsControl,
	"print":  func(r rune) bool { return r >= 32 && r < 127 },
	"graph":  func(r rune) bool { return r > 32 && r < 127 },
}

// trCmd translates, deletes or squeezes characters of stdin: tr [-d] [-s]
// [-c] SET1 [SET2].
func trCmd(c *cmd, args []string) int {
	var del, squeeze, complement bool
	rest, st, ok := c.flags(args, "", 1, func(f, _ string) error {
		switch f {
		case "-d", "--delete":
			del = true
		case "-s", "--squeeze-repeats":
			squeeze = true
		case "-c", "-C", "--complement":
			complement = true
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	if len(rest) == 0 || len(rest) > 2 || (!del && !squeeze && len(rest) != 2) {
		return c.errf(1, "usage: tr [-cds] SET1 [SET2] (input is read from stdin)")
	}
	set1, err := expandTrSet(rest[0])
	if err != nil {
		return c.errf(1, "%v", err)
	}
	var set2 []rune
	if len(rest) == 2 {
		if set2, err = expandTrSet(rest[1]); err != nil {
			return c.errf(1, "%v", err)
		}
	}
	in1 := make(map[rune]int, len(set1))
	for i, r := range set1 {
		if _, dup := in1[r]; !dup {
			in1[r] = i
		}
	}
	member := func(r rune) bool {
		_, ok := in1[r]
		return ok != complement
	}
	translate := func(r rune) rune {
		if del || len(set2) == 0 {
			return r
		}
		if complement {
			if member(r) {
				return set2[len(set2)-1]
			}
			return r
		}
		if i, ok := in1[r]; ok {
			if i >= len(set2) {
				return set2[len(set2)-1]
			}
			return set2[i]
		}
		return r
	}
	squeezeSet := set1
	if len(set2) > 0 && !del {
		squeezeSet = set2
	} else if del {
		squeezeSet = set2
	}
	inSqueeze := make(map[rune]bool, len(squeezeSet))
	for _, r := range squeezeSet {
		inSqueeze[r] = true
	}
	squeezeAll := squeeze && !del && len(set2) == 0
	data, err := c.readAll()
	if err != nil {
		return c.readErr(err)
	}
	var last rune = -1
	for _, r := range string(data) {
		if del && member(r) {
			continue
		}
		r = translate(r)
		if squeeze && r == last && ((squeezeAll && member(r)) || (!squeezeAll && inSqueeze[r])) {
			continue
		}
		c.out.WriteRune(r)
		last = r
	}
	return c.done(0)
}
