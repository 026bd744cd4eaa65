package coreutils

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// numfmtOpts are numfmt's settings.
type numfmtOpts struct {
	from, to               string // none, si, iec, iec-i, auto (from only)
	fromUnit, toUnit       float64
	round                  string
	suffix                 string
	padding                int
	format                 string // the printf-style --format, "" for none
	fields                 []cutRange
	delim                  string // "" for blanks
	invalid                string // abort, fail, warn, ignore
	header                 int
	zeroTerminated         bool
	grouping               bool
	formatPrec             int // precision from --format, -1 for none
	formatWidth            int // width from --format
	formatZero, formatLeft bool
}

var (
	numfmtSI  = []string{"", "K", "M", "G", "T", "P", "E", "Z", "Y", "R", "Q"}
	numfmtIEC = []string{"", "K", "M", "G", "T", "P", "E", "Z", "Y", "R", "Q"}
)

// numfmtCmd converts numbers to and from human-readable form: numfmt
// [--from=none|si|iec|iec-i|auto] [--to=none|si|iec|iec-i] [--from-unit=N]
// [--to-unit=N] [--round=METHOD] [--suffix=S] [--padding=N] [--format=FMT]
// [--field=FIELDS] [-d DELIM] [--header[=N]] [--invalid=MODE] [-z]
// [NUMBER]...; without numbers it converts the lines of stdin.
func numfmtCmd(c *cmd, args []string) int {
	o := numfmtOpts{from: "none", to: "none", fromUnit: 1, toUnit: 1, round: "from-zero", invalid: "abort", formatPrec: -1}
	o.fields = []cutRange{{lo: 1, hi: 1}}
	unit := func(v string) (float64, error) {
		n, err := numfmtParse(v, "auto", "")
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("invalid unit size: %s", quote(v))
		}
		return n, nil
	}
	args = joinLongValues(args, "--from", "--to", "--from-unit", "--to-unit", "--round", "--suffix", "--padding", "--format", "--field", "--delimiter", "--invalid")
	operands, st, ok := c.flags(args, "d", 1, func(f, v string) error {
		var err error
		switch f {
		case "--from":
			if v != "none" && v != "si" && v != "iec" && v != "iec-i" && v != "auto" {
				return fmt.Errorf("invalid argument %s for '--from'", quote(v))
			}
			o.from = v
		case "--to":
			if v != "none" && v != "si" && v != "iec" && v != "iec-i" {
				return fmt.Errorf("invalid argument %s for '--to'", quote(v))
			}
			o.to = v
		case "--from-unit":
			o.fromUnit, err = unit(v)
		case "--to-unit":
			o.toUnit, err = unit(v)
		case "--round":
			switch v {
			case "up", "down", "from-zero", "towards-zero", "nearest":
				o.round = v
			default:
				return fmt.Errorf("invalid argument %s for '--round'", quote(v))
			}
		case "--suffix":
			o.suffix = v
		case "--padding":
			n, perr := strconv.Atoi(v)
			if perr != nil || n == 0 {
				return fmt.Errorf("invalid padding value %s", quote(v))
			}
			o.padding = n
		case "--format":
			err = o.parseFormat(v)
		case "--field":
			o.fields, err = parseCutList(v)
			if err != nil {
				err = fmt.Errorf("invalid field value %s", quote(v))
			}
		case "-d", "--delimiter":
			if len(v) != 1 {
				return fmt.Errorf("the delimiter must be a single character")
			}
			o.delim = v
		case "--invalid":
			switch v {
			case "abort", "fail", "warn", "ignore":
				o.invalid = v
			default:
				return fmt.Errorf("invalid argument %s for '--invalid'", quote(v))
			}
		case "--header":
			o.header = 1
			if v != "" {
				n, perr := strconv.Atoi(v)
				if perr != nil || n < 1 {
					return fmt.Errorf("invalid header value %s", quote(v))
				}
				o.header = n
			}
		case "-z", "--zero-terminated":
			o.zeroTerminated = true
		case "--grouping":
			o.grouping = true // the C locale groups nothing
		case "--debug":
		default:
			return errUnknownFlag
		}
		return err
	})
	if !ok {
		return st
	}
	status := 0
	if len(operands) > 0 {
		for _, a := range operands {
			out, err := o.convert(a)
			if err != nil {
				if s, stop := c.numfmtInvalid(&o, err); stop {
					return c.done(s)
				} else if s > status {
					status = s
				}
				out = a
				if o.invalid == "abort" {
					return c.done(2)
				}
			}
			c.out.WriteString(out + "\n")
		}
		return c.done(status)
	}
	eol := "\n"
	if o.zeroTerminated {
		eol = "\x00"
	}
	data, err := c.readAll()
	if err != nil {
		return c.readErr(err)
	}
	text := string(data)
	lines := strings.Split(strings.TrimSuffix(text, eol), eol)
	if text == "" {
		lines = nil
	}
	for i, line := range lines {
		if c.stopped() {
			return c.errf(2, "interrupted")
		}
		if i < o.header {
			c.out.WriteString(line + eol)
			continue
		}
		out, s, stop := c.numfmtLine(&o, line)
		if s > status {
			status = s
		}
		c.out.WriteString(out + eol)
		if stop {
			return c.done(status)
		}
	}
	return c.done(status)
}

// numfmtInvalid reports a number that could not be converted, as
// --invalid says; stop is true when numfmt ends (abort).
func (c *cmd) numfmtInvalid(o *numfmtOpts, err error) (status int, stop bool) {
	switch o.invalid {
	case "ignore":
		return 0, false
	case "warn":
		c.errf(0, "%v", err)
		return 0, false
	case "fail":
		c.errf(2, "%v", err)
		return 2, false
	}
	c.errf(2, "%v", err)
	return 2, true
}

// numfmtLine converts the selected fields of one line.
func (c *cmd) numfmtLine(o *numfmtOpts, line string) (string, int, bool) {
	type field struct{ ws, text string }
	var fields []field
	if o.delim != "" {
		for _, f := range strings.Split(line, o.delim) {
			fields = append(fields, field{text: f})
		}
	} else {
		rest := line
		for rest != "" {
			i := 0
			for i < len(rest) && (rest[i] == ' ' || rest[i] == '\t') {
				i++
			}
			j := i
			for j < len(rest) && rest[j] != ' ' && rest[j] != '\t' {
				j++
			}
			fields = append(fields, field{ws: rest[:i], text: rest[i:j]})
			rest = rest[j:]
		}
	}
	status := 0
	var b strings.Builder
	for i, f := range fields {
		if o.delim != "" && i > 0 {
			b.WriteString(o.delim)
		}
		if !inCutList(o.fields, i+1) {
			b.WriteString(f.ws + f.text)
			continue
		}
		out, err := o.convert(f.text)
		if err != nil {
			s, stop := c.numfmtInvalid(o, err)
			status = max(status, s)
			if stop {
				return line, status, true
			}
			b.WriteString(f.ws + f.text)
			continue
		}
		// Blanks before a field: one stays as the separator (none
		// before the first field); with auto-padding the number takes
		// the width the blanks and text had.
		sepWS := ""
		if i > 0 && f.ws != "" {
			sepWS = f.ws[:1]
		}
		if o.padding == 0 && o.formatWidth == 0 && f.ws != "" && o.delim == "" {
			w := len(f.ws) + len(f.text) - len(sepWS)
			out = strings.Repeat(" ", max(w-len(out), 0)) + out
		}
		b.WriteString(sepWS + out)
	}
	return b.String(), status, false
}

// parseFormat reads --format: "%[-'0][WIDTH][.PREC]f" with text around it.
func (o *numfmtOpts) parseFormat(v string) error {
	i := strings.IndexByte(v, '%')
	for i >= 0 && i+1 < len(v) && v[i+1] == '%' {
		j := strings.IndexByte(v[i+2:], '%')
		if j < 0 {
			i = -1
			break
		}
		i += 2 + j
	}
	if i < 0 {
		return fmt.Errorf("format %s has no %% directive", quote(v))
	}
	j := i + 1
	for j < len(v) && strings.IndexByte("-'0", v[j]) >= 0 {
		switch v[j] {
		case '-':
			o.formatLeft = true
		case '0':
			o.formatZero = true
		}
		j++
	}
	k := j
	for k < len(v) && v[k] >= '0' && v[k] <= '9' {
		k++
	}
	if k > j {
		o.formatWidth, _ = strconv.Atoi(v[j:k])
		o.formatWidth = min(o.formatWidth, 1<<12)
	}
	if k < len(v) && v[k] == '.' {
		k++
		p := k
		for k < len(v) && v[k] >= '0' && v[k] <= '9' {
			k++
		}
		o.formatPrec, _ = strconv.Atoi(v[p:k])
		o.formatPrec = min(o.formatPrec, 64)
	}
	if k >= len(v) || v[k] != 'f' {
		return fmt.Errorf("invalid format %s, directive must be %%[0]['][-][N][.][N]f", quote(v))
	}
	if strings.Contains(v[k+1:], "%") && !strings.Contains(v[k+1:], "%%") {
		return fmt.Errorf("format %s has too many %% directives", quote(v))
	}
	o.format = v[:i] + "\x00" + v[k+1:]
	return nil
}

// numfmtParse reads a number with an optional unit suffix as from says.
func numfmtParse(s, from, suffix string) (float64, error) {
	t := strings.TrimSpace(s)
	if suffix != "" {
		t = strings.TrimSuffix(t, suffix)
	}
	// The longest numeric prefix.
	i := 0
	if i < len(t) && (t[i] == '-' || t[i] == '+') {
		i++
	}
	digits := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		if t[i] != '.' {
			digits++
		}
		i++
	}
	if digits == 0 {
		return 0, fmt.Errorf("invalid number: %s", quote(s))
	}
	n, err := strconv.ParseFloat(t[:i], 64)
	if err != nil {
		return 0, fmt.Errorf("invalid number: %s", quote(s))
	}
	rest := t[i:]
	if rest == "" {
		return n, nil
	}
	if from == "none" {
		if strings.IndexByte("KMGTPEZYRQk", rest[0]) >= 0 {
			return 0, fmt.Errorf("rejecting suffix in input: %s (consider using --from)", quote(s))
		}
		return 0, fmt.Errorf("invalid suffix in input: %s", quote(s))
	}
	p := strings.IndexByte("KMGTPEZYRQ", rest[0])
	if rest[0] == 'k' {
		p = 0
	}
	if p < 0 {
		return 0, fmt.Errorf("invalid suffix in input: %s", quote(s))
	}
	rest = rest[1:]
	base := 1000.0
	switch from {
	case "iec":
		base = 1024
	case "iec-i":
		if rest != "i" {
			return 0, fmt.Errorf("missing 'i' suffix in input: %s (e.g. Ki/Mi/Gi)", quote(s))
		}
		base, rest = 1024, ""
	case "auto":
		if rest == "i" {
			base, rest = 1024, ""
		}
	}
	if rest != "" {
		return 0, fmt.Errorf("invalid suffix in input: %s", quote(s))
	}
	return n * math.Pow(base, float64(p+1)), nil
}

// numfmtRound rounds x to an integer as --round says.
func numfmtRound(x float64, how string) float64 {
	switch how {
	case "up":
		return math.Ceil(x)
	case "down":
		return math.Floor(x)
	case "towards-zero":
		return math.Trunc(x)
	case "nearest":
		return math.Round(x)
	}
	if x < 0 {
		return -math.Ceil(-x)
	}
	return math.Ceil(x)
}

// convert turns one number as the options say.
func (o *numfmtOpts) convert(s string) (string, error) {
	n, err := numfmtParse(s, o.from, o.suffix)
	if err != nil {
		return "", err
	}
	n = n * o.fromUnit / o.toUnit
	var text string
	if o.to == "none" {
		prec := max(o.formatPrec, 0)
		if o.formatPrec < 0 {
			// A number keeps the decimals it was written with.
			prec = 0
			if _, frac, ok := strings.Cut(strings.TrimSpace(s), "."); ok && o.fromUnit == 1 && o.toUnit == 1 {
				for prec < len(frac) && frac[prec] >= '0' && frac[prec] <= '9' {
					prec++
				}
				if strings.TrimSuffix(frac[prec:], o.suffix) != "" {
					prec = 0 // 1.5M: the unit made it an integer
				}
			}
			scale := math.Pow(10, float64(prec))
			text = strconv.FormatFloat(numfmtRound(n*scale, o.round)/scale, 'f', prec, 64)
		} else {
			scale := math.Pow(10, float64(prec))
			text = strconv.FormatFloat(numfmtRound(n*scale, o.round)/scale, 'f', prec, 64)
		}
	} else {
		base := 1000.0
		if o.to != "si" {
			base = 1024
		}
		units := numfmtSI
		if o.to != "si" {
			units = numfmtIEC
		}
		neg := n < 0
		x := math.Abs(n)
		u := 0
		for x >= base && u < len(units)-1 {
			x /= base
			u++
		}
		prec := o.formatPrec
		for {
			var r float64
			p := prec
			if p < 0 {
				p = 0
				if u > 0 && x < 10 {
					p = 1
				}
			}
			scale := math.Pow(10, float64(p))
			sx := x
			if neg {
				sx = -x
			}
			r = numfmtRound(sx*scale, o.round) / scale
			if math.Abs(r) >= base && u < len(units)-1 {
				x /= base
				u++
				continue
			}
			if prec < 0 && u > 0 && math.Abs(r) >= 10 && p == 1 {
				// 9.96K rounds to 10: shown without a decimal.
				p = 0
			}
			text = strconv.FormatFloat(r, 'f', p, 64)
			break
		}
		if u > 0 {
			text += units[u]
			if o.to == "iec-i" {
				text += "i"
			}
		}
	}
	text += o.suffix
	if o.format != "" {
		pre, post, _ := strings.Cut(o.format, "\x00")
		if len(text) < o.formatWidth {
			pad := strings.Repeat(" ", o.formatWidth-len(text))
			switch {
			case o.formatLeft:
				text += pad
			case o.formatZero:
				neg := strings.HasPrefix(text, "-")
				text = strings.TrimPrefix(text, "-")
				text = strings.Repeat("0", o.formatWidth-len(text)-btoi(neg)) + text
				if neg {
					text = "-" + text
				}
			default:
				text = pad + text
			}
		}
		text = pre + text + strings.ReplaceAll(post, "%%", "%")
	}
	if o.padding > 0 && len(text) < o.padding {
		text = strings.Repeat(" ", o.padding-len(text)) + text
	} else if o.padding < 0 && len(text) < -o.padding {
		text += strings.Repeat(" ", -o.padding-len(text))
	}
	return text, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
