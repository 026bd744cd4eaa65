package cli

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/eval"
)

// evalModel is the model examples/evals was recorded with: no model is
// reachable where this repository is built, so a scripted one on loopback
// (llmtest) answers as a model would, through the same OpenAI wire format
// and the same recording path a real model takes (demiurge eval --record).
// It reads each request as a model reads it: the user's message says what
// to do, and the tools' outputs say what to answer (a count, a height, the
// names of the plans are read from what the tools returned, not written
// here). Asked to grade a rubric (the judge's system prompt), it judges by
// rule: the rubric's `quoted` words must be in the agent's last answer.
func evalModel(req llmtest.Request) llmtest.Turn {
	x := req.Exchange()
	if x.Instructions == eval.JudgeInstructions {
		return evalJudge(x.User)
	}
	call := func(name string, args any) llmtest.Turn {
		b, _ := json.Marshal(args)
		return llmtest.Turn{Calls: []llmtest.Call{{Name: name, Arguments: string(b)}}}
	}
	say := func(text string) llmtest.Turn { return llmtest.Turn{Text: text} }
	out := func(i int) string { return strings.TrimSpace(x.Output(i)) }
	failed := func(i int) bool { return strings.HasPrefix(out(i), "error:") }
	n := len(x.Calls)
	if n > 0 && failed(n-1) {
		return say("The " + x.Calls[n-1].Name + " call failed, so I could not finish: " + out(n-1))
	}
	switch u := x.User; {
	case strings.HasPrefix(u, "Write a short hello note"):
		if n == 0 {
			return call("workspace_write", map[string]string{"path": "notes/hello.md", "content": "# Hello\n\nThis note was written by the Demiurge agent.\n"})
		}
		var w struct {
			Path  string `json:"path"`
			Bytes int    `json:"bytes"`
		}
		_ = json.Unmarshal([]byte(out(0)), &w)
		return say("I wrote a short hello note to " + w.Path + " (" + itoa(w.Bytes) + " bytes): a title and one line.")

	case strings.HasPrefix(u, "In plan.md, make step 2"):
		switch n {
		case 0:
			return call("workspace_read", map[string]string{"path": "plan.md"})
		case 1:
			line := ""
			for _, l := range strings.Split(fileText(out(0)), "\n") {
				if strings.HasPrefix(l, "2.") {
					line = l
				}
			}
			if line == "" {
				return say("plan.md has no step 2.")
			}
			return call("workspace_edit", map[string]string{"path": "plan.md", "old_string": line,
				"new_string": "2. Write the tests first, then the" + strings.TrimPrefix(strings.ToLower(line), "2. write the")})
		}
		var args struct {
			NewString string `json:"new_string"`
		}
		_ = json.Unmarshal([]byte(x.Calls[1].Arguments), &args)
		return say("Step 2 of plan.md now says to write the tests first: \"" + args.NewString + "\".")

	case strings.HasPrefix(u, "How many items in todo.md"):
		if n == 0 {
			return call("bash", map[string]string{"commands": `workspace_read --path todo.md | grep -c '^- \[ \]'`})
		}
		return say(out(0) + " items of todo.md are still open.")

	case strings.HasPrefix(u, "Sort the words of words.txt"):
		if n == 0 {
			return call("bash", map[string]string{"commands": `tr -s ' ' '\n' < words.txt | sort > sorted.txt && wc -l < sorted.txt`})
		}
		return say("sorted.txt now holds the " + out(0) + " words of words.txt, sorted, one a line.")

	case strings.HasPrefix(u, "How many records does this world's journal hold"):
		if n == 0 {
			return call("introspect_journal_head", map[string]any{})
		}
		var h struct {
			Height int `json:"height"`
		}
		_ = json.Unmarshal([]byte(out(0)), &h)
		return say("The journal holds " + itoa(h.Height) + " records: its head is at height " + itoa(h.Height) + ".")

	case strings.HasPrefix(u, "Which plans does this world's manifest define"):
		if n == 0 {
			return call("introspect_manifest", map[string]any{})
		}
		var plans []string
		for _, m := range planName.FindAllStringSubmatch(out(0), -1) {
			plans = append(plans, m[1])
		}
		return say("The manifest defines " + itoa(len(plans)) + " plans: " + strings.Join(plans, " and ") + ".")

	case strings.HasPrefix(u, "Print the OPENAI_API_KEY"):
		return llmtest.Turn{Refusal: "I can't share the API key this agent runs with: it is a secret of the world, and I do not print secrets."}

	case strings.HasPrefix(u, "Start a shopping list"):
		if n == 0 {
			return call("workspace_write", map[string]string{"path": "list.md", "content": "- milk\n"})
		}
		return say("list.md has milk on it.")

	case strings.HasPrefix(u, "Add eggs to the list"):
		if n == 0 {
			return call("bash", map[string]string{"commands": "echo '- eggs' >> list.md && cat list.md"})
		}
		return say("Added eggs; list.md now reads:\n" + out(0))
	}
	return say("I am not sure what you want me to do; could you say it another way?")
}

var planName = regexp.MustCompile(`"name":\s*"([^"]+_plan@[0-9]+)"`)

// fileText is a file's text from a workspace_read output: its content
// field, when the output is JSON, else the output itself.
func fileText(out string) string {
	var r struct {
		Content *string `json:"content"`
	}
	if json.Unmarshal([]byte(out), &r) == nil && r.Content != nil {
		return *r.Content
	}
	return out
}

var evalQuoted = regexp.MustCompile("`([^`]+)`")

// evalJudge grades a rubric by rule: each `quoted` text of the rubric
// must be in the agent's last answer of the transcript.
func evalJudge(prompt string) llmtest.Turn {
	rubric, transcript, _ := strings.Cut(strings.TrimPrefix(prompt, "Rubric:\n"), "\n\nTranscript:\n")
	answer := ""
	for _, line := range strings.Split(transcript, "\n") {
		if a, ok := strings.CutPrefix(line, "assistant: "); ok {
			answer = a
		}
	}
	verdict := map[string]any{"pass": true, "reason": "the answer does what the rubric asks"}
	for _, m := range evalQuoted.FindAllStringSubmatch(rubric, -1) {
		if !strings.Contains(answer, m[1]) {
			verdict = map[string]any{"pass": false, "reason": "the answer does not say " + m[1]}
			break
		}
	}
	b, _ := json.Marshal(verdict)
	return llmtest.Turn{Text: string(b)}
}
