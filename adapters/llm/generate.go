package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"

	"github.com/demiurge-dev/demiurge/cas"
)

// Blobs is the store Generate reads the message and tools blobs from and
// writes the receipt's blobs and nodes to.
type Blobs interface {
	cas.Getter
	cas.Putter
}

// call is one Generate call's request, ready to send, and its state.
type call struct {
	provider  string
	model     Model // what is known of the model called
	apiKey    string
	body      *spliced       // the request body, as its parts (see splice.go)
	dialect   string         // the dialect the body's segments were encoded for
	chain     *chainState    // what the next request of the transcript builds on
	prev      *chainState    // what this one built on, nil if nothing
	native    *splicedBody   // the native providers' request body (see native.go)
	session   *nativeSession // the chat's native session
	beta      string         // ProviderAnthropic: the anthropic-beta header
	onDelta   func(string)
	delivered bool // a delta reached onDelta: a retry would repeat text
	released  bool // the session was told this call's body is no longer being sent

	// What the request was made from (the native providers): a paused
	// answer's continuation is made from them and the answer so far.
	params Params
	refs   []cas.Ref
	tools  []tool
	// texted: the answer this request continues has text, and ended with
	// a block of another kind (a paused Anthropic answer's server tool):
	// the text streamed next starts a line.
	texted bool
}

// releaseSession tells the chat's native session, once, that this call's
// body is no longer being sent (the session counts the bodies out).
func (c *call) releaseSession() {
	if c.session != nil && !c.released {
		c.released = true
		c.session.release()
	}
}

// deliver hands a text delta to the caller.
func (c *call) deliver(text string) {
	if text != "" {
		c.delivered = true
		c.onDelta(text)
	}
}

// parse reads a complete (non-stream) response body of the call's provider.
func (c *call) parse(body []byte) (parsed, error) {
	switch c.provider {
	case ProviderChat:
		return parseChatBody(body)
	case ProviderAnthropic:
		return parseAnthropicBody(body)
	case ProviderGemini:
		return parseGeminiBody(body)
	}
	return parseResponsesBody(body)
}

// exchange is the evidence of one attempt.
type exchange struct {
	request  []byte // the request body sent, when it was not spliced
	response []byte // the response body (stream: the final object, or the bytes read before it failed)
}

// Generate makes one model call: it reads the transcript from the message
// blobs named by p.MessageRefs and the tools from p.ToolsRef, sends them to
// the provider, and writes to blobs the output array, one ToolCall node per
// function call, the OutputItem list node, and the raw request and response
// as evidence. The receipt names them all.
//
// apiKey is the resolved plaintext key, sent as "Authorization: Bearer"
// (to Azure, as "api-key"); "" sends none (local servers). It is never
// stored or logged.
//
// The request follows what is known of p.Model (Generator.ModelFor): the
// token-limit field, whether a temperature, a reasoning effort and
// encrypted reasoning are sent, and how reasoning goes back to the model.
// The receipt's cost is the usage at the model's price; without a price,
// or when the provider reports no usage, the cost is unknown.
//
// If onDelta is not nil the streaming API is used and onDelta receives the
// text of the assistant's message as it is written (from the calling
// goroutine, before Generate returns); only the completed response is
// recorded. A stream cut off before its end is an error, retried only if no
// text had reached onDelta.
//
// With Params.PreviousResponseID (openai-responses only) the request
// carries previous_response_id and store:true, and sends only the
// transcript items after its last model output (assistant message,
// reasoning or tool call): the provider already holds the rest. Without it,
// the whole transcript is sent with store:false (unless Config.Store).
//
// Errors: a bad parameter or blob wraps ErrInvalidParams and nothing is
// sent; a provider failure is a *ProviderError after the retries
// (Config.MaxAttempts); cancelling ctx returns ctx's error. When the call
// fails, Generate writes nothing to blobs except the evidence a
// ProviderError names.
func (g *Generator) Generate(ctx context.Context, blobs Blobs, p Params, apiKey string, onDelta func(text string)) (Receipt, error) {
	c, err := g.prepare(ctx, blobs, p, apiKey, onDelta)
	if err != nil {
		return Receipt{}, err
	}
	defer func() { c.releaseSession() }()
	ex, res, attempts, failed, err := g.send(ctx, blobs, c, apiKey, 0, nil)
	if err != nil {
		return Receipt{}, err
	}
	if c.provider == ProviderAnthropic && res.finish == finishPauseTurn {
		c, ex, res, attempts, failed, err = g.continuePaused(ctx, blobs, c, apiKey, ex, res, attempts, failed)
		if err != nil {
			return Receipt{}, err
		}
	}
	return g.record(ctx, blobs, c, p, apiKey, ex, res, attempts, failed)
}

// send sends the call's request, trying again as the failures allow.
// Attempts are numbered on from attempts; failed are those before. A
// provider failure that is not tried again is a *ProviderError, its
// evidence stored.
func (g *Generator) send(ctx context.Context, blobs Blobs, c *call, apiKey string, attempts int, failed []FailedAttempt) (exchange, parsed, int, []FailedAttempt, error) {
	first := attempts
	for {
		attempts++
		ex, res, err := g.attempt(ctx, c)
		if err == nil {
			return ex, res, attempts, failed, nil
		}
		var pe *ProviderError
		if ctx.Err() != nil || !errors.As(err, &pe) {
			return ex, res, attempts, failed, fmt.Errorf("llm: %s: call abandoned after %d attempt(s): %w", c.provider, attempts, err)
		}
		pe.Attempts = attempts
		if ex.request == nil && c.body != nil {
			ex.request = c.body.bytes() // the evidence of a failed attempt
		} else if ex.request == nil && c.native != nil {
			ex.request = c.native.bytes()
		}
		wait, retry := g.nextWait(pe, attempts-first)
		pe.redact(apiKey)
		if !retry {
			g.keepEvidence(ctx, blobs, ex, pe, apiKey)
			return ex, res, attempts, failed, pe
		}
		failed = append(failed, g.failedAttempt(ctx, blobs, ex, pe, apiKey, wait))
		g.logger.LogAttrs(ctx, slog.LevelWarn, "llm attempt failed; retrying",
			slog.String("provider", c.provider), slog.String("model", c.params.Model),
			slog.Int("attempt", attempts), slog.Duration("wait", wait), slog.String("error", pe.Error()))
		if err := sleep(ctx, wait); err != nil {
			return ex, res, attempts, failed, fmt.Errorf("llm: %s: call abandoned after %d attempt(s): %w", c.provider, attempts, err)
		}
	}
}

// failedAttempt records an attempt that failed and is retried, with its
// evidence stored.
func (g *Generator) failedAttempt(ctx context.Context, blobs Blobs, ex exchange, pe *ProviderError, apiKey string, wait time.Duration) FailedAttempt {
	ev := *pe
	g.keepEvidence(ctx, blobs, ex, &ev, apiKey)
	fa := FailedAttempt{Attempt: uint64(pe.Attempts), Kind: string(pe.Kind), Status: uint64(max(pe.Status, 0)),
		Message: pe.Message, RequestID: pe.RequestID, WaitMS: uint64(wait.Milliseconds())}
	fa.setEvidence(&ev)
	return fa
}

// setEvidence names the request and response a provider error stored as
// its evidence, those it has.
func (fa *FailedAttempt) setEvidence(pe *ProviderError) {
	if pe.RequestRef.Valid() {
		r := pe.RequestRef
		fa.RequestRef = &r
	}
	if pe.ResponseRef.Valid() {
		r := pe.ResponseRef
		fa.ResponseRef = &r
	}
}

// prepare checks p, loads its blobs and builds the provider request.
func (g *Generator) prepare(ctx context.Context, blobs Blobs, p Params, apiKey string, onDelta func(string)) (*call, error) {
	c := &call{provider: p.Provider, apiKey: apiKey, onDelta: onDelta}
	if c.provider == "" {
		c.provider = g.cfg.Provider
	}
	if !IsProvider(c.provider) {
		return nil, invalidf("provider %q is not one of %s", p.Provider, strings.Join(Providers(), ", "))
	}
	if p.Model == "" {
		return nil, invalidf("model is empty: name the provider's model, such as \"gpt-5-mini\"")
	}
	c.model, _ = g.modelOf(c.provider, p.Model)
	if p.InstructionsRef != nil {
		b, err := blobs.Get(ctx, *p.InstructionsRef)
		if err != nil {
			return nil, fmt.Errorf("%w: instructions_ref %s: %w", ErrInvalidParams, p.InstructionsRef.Short(), err)
		}
		text := string(b)
		if p.Instructions != nil && *p.Instructions != "" {
			text = *p.Instructions + "\n\n" + text
		}
		p.Instructions = &text
	}
	if az := g.cfg.Azure; az != nil && !isNative(c.provider) {
		p.Model = az.deployment(p.Model) // Azure's model field names the deployment
	}
	refs, err := g.transcriptRefs(ctx, blobs, p)
	if err != nil {
		return nil, err
	}
	var tools []tool
	if p.ToolsRef != nil {
		var err error
		if tools, err = g.tools.load(ctx, blobs, *p.ToolsRef); err != nil {
			return nil, err
		}
	}
	c.params, c.refs, c.tools = p, refs, tools
	switch c.provider {
	case ProviderAnthropic:
		return c, g.prepareAnthropic(ctx, blobs, c, p, refs, tools)
	case ProviderGemini:
		return c, g.prepareGemini(ctx, blobs, c, p, refs, tools)
	}
	c.dialect = g.dialect(c.provider, p, c.model)
	prev := g.chains.get(c.dialect, refs)
	st, err := g.loadItems(ctx, blobs, refs, prev)
	if err != nil {
		return nil, err
	}
	st.dialect = c.dialect
	if c.provider == ProviderChat {
		c.body, err = g.spliceChat(p, st, prev, tools, c.model, onDelta != nil, c.dialect)
	} else {
		c.body, err = g.spliceResponses(p, st, prev, tools, c.model, onDelta != nil, c.dialect)
	}
	if err != nil {
		return nil, err
	}
	c.chain, c.prev = st, prev
	return c, nil
}

// nextWait says whether a failed attempt is tried again, and after how long.
func (g *Generator) nextWait(pe *ProviderError, attempts int) (time.Duration, bool) {
	if !pe.Retryable || attempts >= g.cfg.MaxAttempts {
		return 0, false
	}
	wait := max(g.cfg.Backoff(attempts), 0)
	if pe.header != nil {
		if ra, ok := pe.retryAfter(); ok {
			if ra > maxRetryAfter {
				pe.Hint += fmt.Sprintf(" (the provider asked to wait %s)", ra.Round(time.Second))
				return 0, false
			}
			wait = max(wait, ra)
		}
	}
	return wait, true
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// attempt sends the request once.
func (g *Generator) attempt(ctx context.Context, c *call) (exchange, parsed, error) {
	actx, cancel := context.WithTimeout(ctx, g.cfg.Timeout)
	defer cancel()
	switch c.provider {
	case ProviderAnthropic:
		return g.attemptAnthropic(ctx, actx, c)
	case ProviderGemini:
		return g.attemptGemini(ctx, actx, c)
	}
	cp := &capture{stream: c.onDelta != nil, sent: c.body}
	opts := []option.RequestOption{option.WithMiddleware(cp.middleware), option.WithRequestBody("application/json", c.body.reader())}
	switch az := g.cfg.Azure; {
	case az != nil:
		if c.apiKey != "" {
			opts = append(opts, option.WithHeader("api-key", c.apiKey))
		}
		if base := az.chatDeploymentBase(c.model.Name); base != "" && c.provider == ProviderChat {
			opts = append(opts, option.WithBaseURL(base))
		}
	case c.apiKey != "":
		opts = append(opts, option.WithAPIKey(c.apiKey))
	}
	if c.onDelta != nil {
		return g.attemptStream(ctx, actx, c, cp, opts)
	}
	var body []byte
	opts = append(opts, option.WithResponseBodyInto(&body))
	var err error
	if c.provider == ProviderChat {
		_, err = g.chat.New(actx, openai.ChatCompletionNewParams{}, opts...)
	} else {
		_, err = g.responses.New(actx, responses.ResponseNewParams{}, opts...)
	}
	ex := exchange{request: cp.request, response: cp.body}
	if ctx.Err() != nil {
		return ex, parsed{}, ctx.Err()
	}
	if cp.status == 0 || cp.status >= 400 || cp.readErr != nil || cp.tooLarge {
		return ex, parsed{}, g.transportError(c, actx, cp, err)
	}
	res, err := c.parse(cp.body)
	if err != nil {
		return ex, parsed{}, g.parseFailure(c, cp, err)
	}
	return ex, res, nil
}

// attemptStream sends the request once, streaming.
func (g *Generator) attemptStream(ctx, actx context.Context, c *call, cp *capture, opts []option.RequestOption) (exchange, parsed, error) {
	var (
		final  []byte // the completed response object (chat: assembled)
		events int
		failed error // an "error" event, or an event that does not decode
		err    error
		resp   *http.Response
	)
	// The request is the SDK's own streaming request; the events are
	// decoded here, reading only the fields used, which costs a fraction
	// of decoding every event into the SDK's event union.
	opts = append(opts, option.WithResponseBodyInto(&resp))
	if c.provider == ProviderChat {
		_, err = g.chat.New(actx, openai.ChatCompletionNewParams{}, opts...)
	} else {
		_, err = g.responses.New(actx, responses.ResponseNewParams{}, opts...)
	}
	if err == nil && resp != nil {
		dec := ssestream.NewDecoder(resp)
		acc := &chatStream{}
		for final == nil && failed == nil && dec.Next() {
			ev := dec.Event()
			if bytes.HasPrefix(ev.Data, []byte("[DONE]")) {
				break
			}
			events++
			if c.provider == ProviderChat {
				delta, aerr := acc.add(ev.Data)
				if aerr != nil {
					failed = aerr
					break
				}
				c.deliver(delta)
				continue
			}
			var se streamEvent
			if uerr := json.Unmarshal(ev.Data, &se); uerr != nil {
				failed = badResponse("stream event %d is not a JSON event: %v", events, uerr)
				break
			}
			switch se.Type {
			case "response.output_text.delta", "response.refusal.delta":
				c.deliver(se.Delta)
			case "response.completed", "response.incomplete", "response.failed":
				final = se.Response
				if final == nil {
					final = []byte{}
				}
			case "error", "":
				if se.Type == "error" || (len(se.Error) > 0 && string(se.Error) != "null") {
					failed = streamEventError(ev.Data)
				}
			}
		}
		err = dec.Err()
		dec.Close()
		if c.provider == ProviderChat && failed == nil && err == nil && acc.done() {
			final, failed = acc.assemble()
		}
	}

	ex := exchange{request: cp.request}
	if cp.tee != nil {
		ex.response = cp.tee.Bytes()
	} else {
		ex.response = cp.body
	}
	if ctx.Err() != nil {
		return ex, parsed{}, ctx.Err()
	}
	if final != nil {
		ex.response = final
		res, perr := c.parse(final)
		if perr != nil {
			return ex, parsed{}, g.parseFailure(c, cp, perr)
		}
		return ex, res, nil
	}
	if failed != nil {
		return ex, parsed{}, g.parseFailure(c, cp, failed)
	}
	if cp.status == 0 || cp.status >= 400 || err != nil {
		return ex, parsed{}, g.transportError(c, actx, cp, err)
	}
	if events == 0 && contentTypeJSON(cp.header) && cp.tee != nil {
		// The server ignored "stream": true and sent one JSON body.
		body := cp.tee.Bytes()
		res, perr := c.parse(body)
		if perr != nil {
			return ex, parsed{}, g.parseFailure(c, cp, perr)
		}
		c.deliver(res.text)
		return exchange{request: cp.request, response: body}, res, nil
	}
	end := "response.completed"
	if c.provider == ProviderChat {
		end = "a finish_reason"
	}
	return ex, parsed{}, &ProviderError{
		Provider: c.provider, Kind: KindStreamCut, Status: cp.status, RequestID: requestIDOf(cp.header),
		Message:   fmt.Sprintf("the stream ended after %d events without %s", events, end),
		Retryable: !c.delivered,
		Hint:      "the connection or the server broke off; try again",
	}
}

// streamEvent is the part of a Responses stream event that is read.
type streamEvent struct {
	Type     string          `json:"type"`
	Delta    string          `json:"delta"`
	Response json.RawMessage `json:"response"`
	Error    json.RawMessage `json:"error"`
}

// streamEventError reads a stream's error event: a Responses "error" event
// or a {"error":{…}} chunk.
func streamEventError(data []byte) error {
	typ, msg, code, _ := errorFields(data)
	if code == "" && typ != "error" {
		code = typ
	}
	if msg == "" {
		msg = "the stream reported an error"
	}
	kind := KindFailed
	switch code {
	case "tool_use_failed": // Groq: the model wrote a malformed tool call
		kind = KindModelFailure
	case "insufficient_quota":
		kind = KindQuota
	}
	return &parseError{kind: kind, code: code, msg: msg,
		retryable: code == "server_error" || code == "rate_limit_exceeded" || code == "tool_use_failed"}
}

// transportError describes an attempt that got no usable HTTP answer: an
// error status, a timeout, a broken connection.
func (g *Generator) transportError(c *call, actx context.Context, cp *capture, err error) *ProviderError {
	pe := &ProviderError{Provider: c.provider, Status: cp.status, Err: err}
	if cp.header != nil {
		pe.RequestID = requestIDOf(cp.header)
	}
	switch {
	case cp.status >= 400:
		pe.Err = nil
		pe.Type, pe.Message, pe.Code, pe.Param = errorFields(cp.body)
		pe.Type, pe.Message = clipText(pe.Type, 100), clipText(pe.Message, 500)
		pe.Code, pe.Param = clipText(pe.Code, 100), clipText(pe.Param, 100)
		if up := upstreamError(cp.body); up != "" {
			pe.Message = clipText(pe.Message+" ("+up+")", 800)
		}
		if pe.Message == "" {
			if len(cp.body) > 0 {
				pe.Message = clipText(string(cp.body), 200)
			} else {
				pe.Message = http.StatusText(cp.status)
			}
		}
		pe.Kind = statusKind(cp.status, pe.Code)
		if pe.Type == "insufficient_quota" { // a server that gives it as the type only
			pe.Kind = KindQuota
		}
		pe.Retryable = retryableStatus(pe.Kind, cp.header)
		pe.Hint = hint(pe.Kind, c.provider, g.baseOf(c.provider), c.apiKey != "")
		if pe.Kind == KindRateLimited {
			if l := rateLimits(cp.header); l != "" {
				pe.Hint += " (the provider's limits: " + l + ")"
			}
		}
		pe.header = cp.header
		return pe
	case cp.tooLarge:
		pe.Kind = KindBadResponse
		pe.Message = fmt.Sprintf("the response body is larger than %d MiB", maxBody>>20)
		pe.Hint = "check the base URL " + g.baseOf(c.provider)
		return pe
	case errors.Is(actx.Err(), context.DeadlineExceeded):
		pe.Kind = KindTimeout
		pe.Message = fmt.Sprintf("no complete answer within %s", g.cfg.Timeout)
		pe.Retryable = false // another wait as long is rarely what the user wants
		pe.Hint = "try again, or raise the per-attempt timeout"
		return pe
	}
	switch {
	case cp.status != 0:
		pe.Kind = KindStreamCut
		if !cp.stream {
			pe.Kind = KindConnection
		}
		pe.Message = "the connection broke before the answer was complete"
		if err != nil {
			pe.Message += ": " + clipText(err.Error(), 200)
		}
		pe.Retryable = !c.delivered
		pe.Hint = "try again"
	default:
		pe.Kind = KindUnreachable
		pe.Message = "no answer"
		if err != nil {
			pe.Message = clipText(err.Error(), 300)
		}
		pe.Retryable = true
		pe.Hint = fmt.Sprintf("is the server at %s running, and the base URL right?", g.baseOf(c.provider))
	}
	return pe
}

// parseFailure describes a response that arrived but is not usable.
func (g *Generator) parseFailure(c *call, cp *capture, err error) *ProviderError {
	pe := &ProviderError{Provider: c.provider, Status: cp.status, Kind: KindBadResponse}
	if cp.header != nil {
		pe.RequestID = requestIDOf(cp.header)
	}
	var perr *parseError
	if !errors.As(err, &perr) {
		pe.Message = clipText(err.Error(), 300)
		return pe
	}
	pe.Kind, pe.Code, pe.Message = perr.kind, clipText(perr.code, 100), clipText(perr.msg, 500)
	pe.Retryable = perr.retryable && !c.delivered
	if perr.kind == KindBadResponse {
		api := map[string]string{ProviderResponses: "Responses API", ProviderChat: "Chat Completions API",
			ProviderAnthropic: "Anthropic Messages API", ProviderGemini: "Gemini API"}[c.provider]
		pe.Hint = fmt.Sprintf("the server at %s does not answer like the %s; check the base URL and the provider", g.baseOf(c.provider), api)
	} else {
		pe.Hint = "the provider could not complete the response"
	}
	return pe
}

// keepEvidence stores a failed call's request and response bodies and names
// them in pe. Evidence that cannot be stored is left out: the provider's
// error matters more than a failing store.
func (g *Generator) keepEvidence(ctx context.Context, blobs Blobs, ex exchange, pe *ProviderError, apiKey string) {
	if ex.request != nil {
		if ref, err := blobs.Put(ctx, redactBytes(ex.request, apiKey)); err == nil {
			pe.RequestRef = ref
		}
	}
	if len(ex.response) > 0 {
		if ref, err := blobs.Put(ctx, redactBytes(ex.response, apiKey)); err == nil {
			pe.ResponseRef = ref
		}
	}
}

// record writes the receipt's blobs and nodes and returns the receipt.
func (g *Generator) record(ctx context.Context, blobs Blobs, c *call, p Params, apiKey string, ex exchange, res parsed, attempts int, failed []FailedAttempt) (Receipt, error) {
	put := func(what string, b []byte) (cas.Ref, error) {
		ref, err := blobs.Put(ctx, b)
		if err != nil {
			return cas.Ref{}, fmt.Errorf("llm: store %s: %w", what, err)
		}
		return ref, nil
	}
	// The request is kept as content-defined chunks: a chat's requests
	// share most of their bytes, so each stores about its new ones, and
	// builds on the last of its transcript (see putEvidence, storeNative).
	var reqRef cas.Ref
	var err error
	if c.native != nil {
		reqRef, err = g.storeNative(ctx, blobs, c.session, c.native, apiKey)
	} else {
		reqRef, err = g.putEvidence(ctx, blobs, c.body, c.prev, c.chain, apiKey)
	}
	if err != nil {
		return Receipt{}, fmt.Errorf("llm: store request: %w", err)
	}
	respRef, err := put("response", redactBytes(ex.response, apiKey))
	if err != nil {
		return Receipt{}, err
	}
	outRef, err := put("output", res.output)
	if err != nil {
		return Receipt{}, err
	}
	callRefs := make([]cas.Ref, len(res.calls))
	for i, tc := range res.calls {
		if callRefs[i], err = cas.PutNode(ctx, blobs, tc); err != nil {
			return Receipt{}, fmt.Errorf("llm: store tool call %s: %w", tc.CallID, err)
		}
	}
	itemsRef, err := cas.PutNode(ctx, blobs, res.items)
	if err != nil {
		return Receipt{}, fmt.Errorf("llm: store output items: %w", err)
	}
	var failedRef *cas.Ref
	if len(failed) > 0 {
		r, err := cas.PutNode(ctx, blobs, failed)
		if err != nil {
			return Receipt{}, fmt.Errorf("llm: store failed attempts: %w", err)
		}
		failedRef = &r
	}
	model := res.model
	if model == "" {
		model = p.Model
	}
	r := Receipt{
		OutputRef:         outRef,
		OutputText:        res.text,
		TokenUsage:        res.usage,
		UsageKnown:        res.usageKnown,
		ProviderID:        res.id,
		Model:             model,
		FinishReason:      res.finish,
		ToolCallRefs:      callRefs,
		OutputItemsRef:    &itemsRef,
		RequestRef:        &reqRef,
		ResponseRef:       &respRef,
		Attempts:          uint64(attempts),
		FailedAttemptsRef: failedRef,
	}
	r.ProviderName = g.providerNameOf(c.provider)
	// The provider's own figure, else the price of the model that
	// answered (a dated snapshot, say), else of the one asked for.
	if res.costKnown {
		r.CostMicroUSD, r.CostKnown = res.cost, true
		r.CostSource = CostSource{Kind: CostFromProvider, Field: res.costField}
	}
	for _, name := range []string{model, p.Model} {
		if r.CostKnown {
			break
		}
		if m, _ := g.modelOf(c.provider, name); m.Price != nil && res.usageKnown {
			billed := res.usage
			if res.billed != nil {
				billed = *res.billed
			}
			r.CostMicroUSD, r.CostKnown = m.Price.CostMicroUSD(billed), true
			r.CostSource = CostSource{Kind: CostFromPrice, Model: name, Source: m.PriceSource()}
		}
	}
	if r.CostKnown {
		r.CostCents = CentsFromMicroUSD(r.CostMicroUSD)
	}
	return r, nil
}

// GenerateCBOR is Generate for an effects dispatcher that holds canonical
// CBOR: params is a sys/LlmGenerateParams@1 value (as cas.Marshal or the
// typed-value normalizer writes it, with or without the self-describe
// prefix) and the result is the sys/LlmGenerateReceipt@3 value as
// cas.Marshal writes it. Params that do not decode wrap ErrInvalidParams.
func (g *Generator) GenerateCBOR(ctx context.Context, blobs Blobs, params []byte, apiKey string, onDelta func(text string)) ([]byte, error) {
	var p Params
	if err := cas.Unmarshal(params, &p); err != nil {
		return nil, fmt.Errorf("%w: decode sys/LlmGenerateParams@1: %w", ErrInvalidParams, err)
	}
	r, err := g.Generate(ctx, blobs, p, apiKey, onDelta)
	if err != nil {
		return nil, err
	}
	b, err := cas.Marshal(r) // sys/LlmGenerateReceipt@3
	if err != nil {
		return nil, fmt.Errorf("llm: encode receipt: %w", err)
	}
	return b, nil
}
