// Package escape decodes the backslash escapes that the shell and its
// utilities share: printf's (the builtin's and the utility's formats and
// %b arguments), and the numeric ones (\xHH, \uHHHH, \UHHHHHHHH) that
// echo -e and $'...' read the same way. One implementation serves them
// all, so that a fix to one is a fix to every one.
package escape

import "strings"

// Printf interprets the backslash escape at the start of s, as printf
// does in its format; with all set it interprets every escape of s, as
// %b does with its argument (where \0NNN is octal and \c stops all
// output). It returns the text, the bytes of s consumed and whether \c
// asked to stop all output. Text before the first backslash, when all
// is not set, is not consumed.
func Printf(s string, all bool) (string, int, bool) {
	var b strings.Builder
	i := 0
	for i < len(s) {
		if s[i] != '\\' {
			if !all {
				return b.String(), i, false
			}
			b.WriteByte(s[i])
			i++
			continue
		}
		if i+1 >= len(s) {
			b.WriteByte('\\')
			i++
			continue
		}
		e := s[i+1]
		i += 2
		switch e {
		case 'a', 'b', 'e', 'E', 'f', 'n', 'r', 't', 'v', '\\', '"', '?':
			b.WriteByte(Letter(e))
		case '\'':
			if all {
				b.WriteString("\\'")
			} else {
				b.WriteByte('\'')
			}
		case 'c':
			if all {
				return b.String(), i, true
			}
			b.WriteString("\\c")
		case '0', '1', '2', '3', '4', '5', '6', '7':
			// \NNN in formats; %b takes \0NNN (and \NNN) too
			j, max := i-1, i+2
			if e == '0' && all {
				j, max = i, i+3
			}
			v := 0
			k := j
			for ; k < len(s) && k < max && s[k] >= '0' && s[k] <= '7'; k++ {
				v = v*8 + int(s[k]-'0')
			}
			b.WriteByte(byte(v))
			i = k
		case 'x', 'u', 'U':
			i += Numeric(&b, s[i:], e)
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
		if !all {
			return b.String(), i, false
		}
	}
	return b.String(), i, false
}

// Letter is the byte that the one-letter escape \c stands for in every
// dialect (a b e E f n r t v, and \\ " ? as themselves), c itself for any
// other letter.
func Letter(c byte) byte {
	switch c {
	case 'a':
		return '\a'
	case 'b':
		return '\b'
	case 'e', 'E':
		return 0x1b
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'v':
		return '\v'
	}
	return c
}

// Numeric decodes the hexadecimal escape whose letter is letter ('x':
// up to 2 digits, one byte; 'u': up to 4 and 'U': up to 8, one character
// in UTF-8) and whose digits start s. It writes the result to b (the
// escape as written, `\x`, when no digit follows) and returns the digits
// it read.
func Numeric(b *strings.Builder, s string, letter byte) int {
	max := 2
	switch letter {
	case 'u':
		max = 4
	case 'U':
		max = 8
	}
	v, k := 0, 0
	for ; k < len(s) && k < max && IsHex(s[k]); k++ {
		v = v*16 + HexVal(s[k])
	}
	switch {
	case k == 0:
		b.WriteByte('\\')
		b.WriteByte(letter)
	case letter == 'x':
		b.WriteByte(byte(v))
	default:
		b.WriteRune(rune(v))
	}
	return k
}

// IsHex reports whether c is a hexadecimal digit.
func IsHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// HexVal is the value of the hexadecimal digit c.
func HexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	default:
		return int(c-'A') + 10
	}
}
