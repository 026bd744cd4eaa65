package coreutils

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// fileCmd names the type of files from their content: file [-b] [-i |
// --mime-type] [FILE]...; the common types of a workspace (text and its
// encodings and line ends, JSON, scripts by their #! line, HTML, XML,
// PNG, JPEG, GIF, PDF, gzip, tar, zip, ELF), "data" otherwise.
func fileCmd(c *cmd, args []string) int {
	brief, mime, mimeType := false, false, false
	files, st, ok := c.flags(args, "", 1, func(f, _ string) error {
		switch f {
		case "-b", "--brief":
			brief = true
		case "-i", "--mime":
			mime = true
		case "--mime-type":
			mimeType = true
		case "-L", "--dereference", "-h", "--no-dereference", "-z", "--uncompress", "-E":
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	if len(files) == 0 {
		return c.errf(1, "Usage: file [-bchikLlNnprsSvzZ0] [--apple] [--extension] [--mime-encoding]\n            [--mime-type] [-e <testname>] [-F <separator>]  [-f <namefile>]\n            [-m <magicfiles>] [-P <parameter=value>] [--exclude-quiet]\n            <file> ...\nTry `file --help' for more information.")
	}
	width := 0
	for _, f := range files {
		if isStdin(f) {
			f = "/dev/stdin"
		}
		width = max(width, len(f))
	}
	for _, f := range files {
		if c.stopped() {
			return c.errf(1, "interrupted")
		}
		var desc, mt, enc string
		switch {
		case isStdin(f):
			data, err := c.readAll()
			if err != nil {
				return c.readErr(err)
			}
			desc, mt, enc = fileType(data)
			f = "/dev/stdin"
		case c.env.FS == nil:
			return c.noFS(1, f)
		default:
			info, err := c.env.FS.Stat(c.ctx, c.abs(f))
			if err != nil {
				desc = fmt.Sprintf("cannot open `%s' (%s)", f, why(err))
				mt, enc = "cannot open", ""
				break
			}
			if info.IsDir() {
				desc, mt, enc = "directory", "inode/directory", "binary"
				break
			}
			data, err := c.env.FS.ReadFile(c.ctx, c.abs(f))
			if err != nil {
				desc = fmt.Sprintf("cannot open `%s' (%s)", f, why(err))
				break
			}
			desc, mt, enc = fileType(data)
		}
		out := desc
		switch {
		case mimeType:
			out = mt
		case mime:
			out = mt + "; charset=" + enc
		}
		if !brief {
			out = f + ":" + strings.Repeat(" ", width-len(f)+1) + out
		}
		c.out.WriteString(out + "\n")
	}
	return c.done(0)
}

// fileType describes content: file's words, its MIME type and charset.
func fileType(data []byte) (desc, mime, charset string) {
	if len(data) == 0 {
		return "empty", "inode/x-empty", "binary"
	}
	has := func(p string) bool { return bytes.HasPrefix(data, []byte(p)) }
	switch {
	case has("\x89PNG\r\n\x1a\n"):
		d := "PNG image data"
		if len(data) >= 29 && string(data[12:16]) == "IHDR" {
			w, h := binary.BigEndian.Uint32(data[16:]), binary.BigEndian.Uint32(data[20:])
			colors := map[byte]string{0: "grayscale", 2: "RGB", 3: "colormap", 4: "gray+alpha", 6: "RGBA"}
			inter := "non-interlaced"
			if data[28] == 1 {
				inter = "interlaced"
			}
			d += fmt.Sprintf(", %d x %d, %d-bit/color %s, %s", w, h, data[24], colors[data[25]], inter)
		}
		return d, "image/png", "binary"
	case has("\xff\xd8\xff"):
		return "JPEG image data", "image/jpeg", "binary"
	case has("GIF87a") || has("GIF89a"):
		d := "GIF image data, version " + string(data[3:6])
		if len(data) >= 10 {
			d += fmt.Sprintf(", %d x %d", binary.LittleEndian.Uint16(data[6:]), binary.LittleEndian.Uint16(data[8:]))
		} else {
			d += ","
		}
		return d, "image/gif", "binary"
	case has("%PDF-"):
		v := strings.TrimSpace(strings.SplitN(string(data[5:min(len(data), 16)]), "\n", 2)[0])
		return "PDF document, version " + v, "application/pdf", "binary"
	case has("\x1f\x8b"):
		d := "gzip compressed data"
		if zr, err := gzip.NewReader(bytes.NewReader(data)); err == nil {
			if zr.Name != "" {
				d += fmt.Sprintf(", was %q", zr.Name)
			}
			if !zr.ModTime.IsZero() && zr.ModTime.Unix() != 0 {
				d += ", last modified: " + zr.ModTime.UTC().Format(time.ANSIC)
			}
		}
		d += ", from Unix"
		if len(data) >= 4 {
			d += fmt.Sprintf(", original size modulo 2^32 %d", binary.LittleEndian.Uint32(data[len(data)-4:]))
		}
		return d, "application/gzip", "binary"
	case has("PK\x03\x04") && len(data) >= 30:
		return "Zip archive data", "application/zip", "binary"
	case has("\x7fELF") && len(data) >= 20:
		bits := "32-bit"
		if data[4] == 2 {
			bits = "64-bit"
		}
		order := "LSB"
		if data[5] == 2 {
			order = "MSB"
		}
		kinds := map[uint16]string{1: "relocatable", 2: "executable", 3: "shared object", 4: "core file"}
		k := binary.LittleEndian.Uint16(data[16:])
		return fmt.Sprintf("ELF %s %s %s", bits, order, kinds[k]), "application/x-executable", "binary"
	case has("BZh"):
		return "bzip2 compressed data, block size = " + string(data[3:min(len(data), 4)]) + "00k", "application/x-bzip2", "binary"
	case has("\xfd7zXZ\x00"):
		return "XZ compressed data, checksum CRC64", "application/x-xz", "binary"
	}
	if len(data) >= 512 && (string(data[257:263]) == "ustar\x00" || string(data[257:265]) == "ustar  \x00") {
		if string(data[257:265]) == "ustar  \x00" {
			return "POSIX tar archive (GNU)", "application/x-tar", "binary"
		}
		return "POSIX tar archive", "application/x-tar", "binary"
	}
	// Text: no NUL and no control characters but the usual ones.
	ascii, valid := true, utf8.Valid(data)
	for _, b := range data {
		if b >= 0x80 {
			ascii = false
			continue
		}
		if b < 32 && b != '\n' && b != '\r' && b != '\t' && b != '\f' && b != '\b' && b != 0x1b || b == 0x7f {
			return "data", "application/octet-stream", "binary"
		}
	}
	if !ascii && !valid {
		return "ISO-8859 text" + textTail(data), "text/plain", "iso-8859-1"
	}
	enc, charset := "ASCII text", "us-ascii"
	if !ascii {
		enc, charset = "Unicode text, UTF-8 text", "utf-8"
	}
	text := string(data)
	trimmed := strings.TrimSpace(text)
	kind, mt := "", "text/plain"
	if strings.HasPrefix(text, "#!") {
		line, _, _ := strings.Cut(text[2:], "\n")
		fields := strings.Fields(line)
		interp := ""
		if len(fields) > 0 {
			interp = fields[0][strings.LastIndexByte(fields[0], '/')+1:]
			if interp == "env" && len(fields) > 1 {
				interp = fields[1]
			}
		}
		names := map[string][2]string{
			"bash": {"Bourne-Again shell script", "text/x-shellscript"}, "sh": {"POSIX shell script", "text/x-shellscript"},
			"zsh": {"Paul Falstad's zsh script", "text/x-shellscript"}, "python": {"Python script", "text/x-script.python"},
			"python3": {"Python script", "text/x-script.python"}, "perl": {"Perl script", "text/x-perl"},
			"node": {"Node.js script", "application/javascript"}, "ruby": {"Ruby script", "text/x-ruby"},
		}
		if n, ok := names[interp]; ok {
			kind, mt = n[0], n[1]
		} else if interp != "" {
			kind = "a " + strings.Join(fields, " ") + " script"
			mt = "text/plain"
		}
		return kind + ", " + enc + " executable" + textTail(data), mt, charset
	}
	switch {
	case isCSV(data):
		return "CSV text", "text/csv", charset
	case (strings.HasPrefix(trimmed, "{") || strings.HasPrefix(trimmed, "[")) && json.Valid(data):
		return "JSON text data", "application/json", charset
	case strings.HasPrefix(trimmed, "<?xml"):
		return "XML 1.0 document, " + enc + textTail(data), "text/xml", charset
	case strings.HasPrefix(strings.ToLower(trimmed), "<!doctype html") || strings.HasPrefix(strings.ToLower(trimmed), "<html"):
		return "HTML document, " + enc + textTail(data), "text/html", charset
	}
	return enc + textTail(data), mt, charset
}

// textTail is what file adds about a text's lines: CRLF terminators,
// very long lines, or none at all.
func textTail(data []byte) string {
	var notes []string
	long := false
	for l := range bytes.SplitSeq(data, []byte("\n")) {
		if len(l) > 300 {
			long = true
			break
		}
	}
	if long {
		notes = append(notes, "with very long lines ("+fmt.Sprint(longestLine(data))+")")
	}
	switch {
	case bytes.Contains(data, []byte("\r\n")):
		notes = append(notes, "with CRLF line terminators")
	case bytes.IndexByte(data, '\r') >= 0 && bytes.IndexByte(data, '\n') < 0:
		notes = append(notes, "with CR line terminators")
	case bytes.IndexByte(data, '\n') < 0:
		notes = append(notes, "with no line terminators")
	}
	if len(notes) == 0 {
		return ""
	}
	return ", " + strings.Join(notes, ", ")
}

func longestLine(data []byte) int {
	n := 0
	for l := range bytes.SplitSeq(data, []byte("\n")) {
		n = max(n, len(l))
	}
	return n
}

// isCSV is libmagic's test: more than two lines (or ten) that all hold
// the same, non-zero number of commas outside quotes.
func isCSV(data []byte) bool {
	nf, tf, nl := 0, 0, 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			for i++; i < len(data); i++ {
				if data[i] == '"' {
					if i+1 < len(data) && data[i+1] == '"' {
						i++
						continue
					}
					break
				}
			}
		case ',':
			nf++
		case '\n':
			nl++
			if nl == 10 {
				return tf != 0 && tf == nf
			}
			if tf == 0 {
				if nf == 0 {
					return false
				}
				tf = nf
			} else if tf != nf {
				return false
			}
			nf = 0
		}
	}
	return tf != 0 && nl > 2
}
