package coreutils

import "strings"

// usages is the table behind "<utility> --help" and the bash tool's
// "help <utility>": a line a utility, its name, its synopsis and what it
// does, separated by tabs. The synopses are GNU's (the utilities follow
// GNU's syntax), so that a script that reads "Usage:" finds it; a flag
// GNU has may still be missing here, and the utility says so when used.
// One string, scanned when asked: nothing is built at init.
const usages = `awk	[-F fs] [-v var=value] [--] 'program' [file ...]	Scan and process patterns in each file (POSIX awk with gawk's common extensions).
base64	[OPTION]... [FILE]	Base64 encode or decode FILE, or standard input, to standard output (-d decodes).
basename	NAME [SUFFIX]	Print NAME with any leading directory components removed (and SUFFIX, when given).
bc	[-lq] [file ...]	An arbitrary precision calculator language.
cat	[OPTION]... [FILE]...	Concatenate FILE(s) to standard output.
chmod	[OPTION]... MODE[,MODE]... FILE...	Change the mode of each FILE to MODE.
cmp	[OPTION]... FILE1 [FILE2]	Compare two files byte by byte.
column	[-t] [-s sep] [-o sep] [file ...]	Columnate lists: format input into columns, or a table with -t.
comm	[OPTION]... FILE1 FILE2	Compare sorted files FILE1 and FILE2 line by line.
cp	[OPTION]... SOURCE... DEST	Copy SOURCE to DEST, or multiple SOURCE(s) to DIRECTORY.
cut	OPTION... [FILE]...	Print selected parts of lines from each FILE to standard output.
date	[OPTION]... [+FORMAT]	Display the date and time in the given FORMAT (the sandbox's clock).
diff	[OPTION]... FILES	Compare FILES line by line.
dirname	NAME...	Output each NAME with its last non-slash component and trailing slashes removed.
du	[OPTION]... [FILE]...	Summarize disk usage of each FILE, recursively for directories.
env	[OPTION]... [NAME=VALUE]... [COMMAND [ARG]...]	Set each NAME to VALUE in the environment and run COMMAND, or print the environment.
expand	[OPTION]... [FILE]...	Convert tabs in each FILE to spaces, writing to standard output.
expr	EXPRESSION	Print the value of EXPRESSION to standard output.
file	[OPTION]... FILE...	Determine the type of each FILE.
find	[path...] [expression]	Search for files in a directory hierarchy.
fold	[OPTION]... [FILE]...	Wrap input lines in each FILE, writing to standard output.
gawk	[-F fs] [-v var=value] [--] 'program' [file ...]	Scan and process patterns in each file (POSIX awk with gawk's common extensions).
grep	[OPTION]... PATTERNS [FILE]...	Search for PATTERNS in each FILE.
gunzip	[OPTION]... [FILE]...	Decompress FILEs (in place, or to standard output with -c).
gzip	[OPTION]... [FILE]...	Compress FILEs (in place, or to standard output with -c).
hd	[-n length] [-s skip] [file ...]	Display file contents in hexadecimal and ASCII (hexdump -C).
head	[OPTION]... [FILE]...	Print the first 10 lines of each FILE to standard output.
hexdump	[-bcCdovx] [-n length] [-s skip] [file ...]	Display file contents in hexadecimal, decimal, octal, or ascii.
hostname	[OPTION]	Show the system's host name.
id	[OPTION]... [USER]	Print user and group information.
join	[OPTION]... FILE1 FILE2	For each pair of input lines with identical join fields, write a line to standard output.
jq	[options] <jq filter> [file...]	Command-line JSON processor.
ln	[OPTION]... TARGET LINK_NAME	Create a link to TARGET with the name LINK_NAME.
ls	[OPTION]... [FILE]...	List information about the FILEs (the current directory by default).
md5sum	[OPTION]... [FILE]...	Print or check MD5 (128-bit) checksums.
mkdir	[OPTION]... DIRECTORY...	Create the DIRECTORY(ies), if they do not already exist.
mktemp	[OPTION]... [TEMPLATE]	Create a temporary file or directory, safely, and print its name.
mv	[OPTION]... SOURCE... DEST	Rename SOURCE to DEST, or move SOURCE(s) to DIRECTORY.
nl	[OPTION]... [FILE]...	Write each FILE to standard output, with line numbers added.
numfmt	[OPTION]... [NUMBER]...	Reformat NUMBER(s), or the numbers from standard input if none are specified.
od	[OPTION]... [FILE]...	Write an unambiguous representation, octal bytes by default, of FILE to standard output.
paste	[OPTION]... [FILE]...	Write lines consisting of the sequentially corresponding lines from each FILE.
printenv	[OPTION]... [VARIABLE]...	Print the values of the specified environment VARIABLE(s), or all of them.
printf	FORMAT [ARGUMENT]...	Print ARGUMENT(s) according to FORMAT.
readlink	[OPTION]... FILE...	Print value of a symbolic link or canonical file name.
realpath	[OPTION]... FILE...	Print the resolved absolute file name.
rev	[file ...]	Reverse lines characterwise.
rg	[OPTIONS] PATTERN [PATH ...]	Recursively search the current directory (or PATHs) for lines matching a regex pattern.
rm	[OPTION]... [FILE]...	Remove (unlink) the FILE(s).
rmdir	[OPTION]... DIRECTORY...	Remove the DIRECTORY(ies), if they are empty.
sed	[OPTION]... {script-only-if-no-other-script} [input-file]...	Stream editor for filtering and transforming text.
seq	[OPTION]... [FIRST [INCREMENT]] LAST	Print numbers from FIRST to LAST, in steps of INCREMENT.
sha1sum	[OPTION]... [FILE]...	Print or check SHA1 (160-bit) checksums.
sha256sum	[OPTION]... [FILE]...	Print or check SHA256 (256-bit) checksums.
sha512sum	[OPTION]... [FILE]...	Print or check SHA512 (512-bit) checksums.
shuf	[OPTION]... [FILE]	Write a random permutation of the input lines to standard output.
sleep	NUMBER[SUFFIX]...	Pause for NUMBER seconds (the script's time limit applies).
sort	[OPTION]... [FILE]...	Write sorted concatenation of all FILE(s) to standard output.
split	[OPTION]... [FILE [PREFIX]]	Output pieces of FILE to PREFIXaa, PREFIXab, ...
stat	[OPTION]... FILE...	Display file or file system status.
strings	[option(s)] [file(s)]	Print the sequences of printable characters in files.
tac	[OPTION]... [FILE]...	Write each FILE to standard output, last line first.
tail	[OPTION]... [FILE]...	Print the last 10 lines of each FILE to standard output.
tar	[OPTION...] [FILE]...	Save many files together into a single archive, and restore individual files from it.
tee	[OPTION]... [FILE]...	Copy standard input to each FILE, and also to standard output.
timeout	[OPTION] DURATION COMMAND [ARG]...	Start COMMAND, and kill it if still running after DURATION.
time	[-p] [-f FORMAT] [-o FILE [-a]] COMMAND [ARG]...	Run COMMAND, then report the time it took on standard error (GNU time).
touch	[OPTION]... FILE...	Update the access and modification times of each FILE to the current time.
tr	[OPTION]... STRING1 [STRING2]	Translate, squeeze, and/or delete characters from standard input, writing to standard output.
tree	[-adfL level] [--noreport] [directory ...]	List the contents of directories in a tree-like format.
truncate	OPTION... FILE...	Shrink or extend the size of each FILE to the specified size.
tty	[OPTION]...	Print the file name of the terminal connected to standard input (the sandbox has none: "not a tty", status 1).
uname	[OPTION]...	Print certain system information.
unexpand	[OPTION]... [FILE]...	Convert blanks in each FILE to tabs, writing to standard output.
uniq	[OPTION]... [INPUT [OUTPUT]]	Filter adjacent matching lines from INPUT (or standard input), writing to OUTPUT (or standard output).
wc	[OPTION]... [FILE]...	Print newline, word, and byte counts for each FILE.
whoami	[OPTION]...	Print the user name associated with the current effective user ID.
xargs	[OPTION]... COMMAND [INITIAL-ARGS]...	Run COMMAND with arguments INITIAL-ARGS and more arguments read from input.
xxd	[options] [infile [outfile]]	Make a hex dump of a file or standard input, or (-r) the reverse.
yes	[STRING]...	Repeatedly output a line with all specified STRING(s), or 'y'.
zcat	[OPTION]... [FILE]...	Decompress FILEs to standard output.
`

// Usage is what "<name> --help" prints for a utility: "Usage: <name>
// <synopsis>", what it does, and that it is the sandbox's; false for a
// name that is not a utility.
func Usage(name string) (string, bool) {
	for rest := usages; rest != ""; {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		n, fields, _ := strings.Cut(line, "\t")
		if n != name {
			continue
		}
		synopsis, what, _ := strings.Cut(fields, "\t")
		return "Usage: " + name + " " + synopsis + "\n" + what + "\n" +
			"(the demiurge sandbox's " + name + ": GNU-compatible, not every option)\n", true
	}
	return "", false
}
