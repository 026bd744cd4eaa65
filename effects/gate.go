package effects

import (
	"fmt"
	"slices"
	"strings"

	"github.com/demiurge-dev/demiurge/schema"
)

// Decision stages, in the order Gate.Check applies them.
const (
	StageKind    = "kind"    // the effect kind is declared
	StageScope   = "scope"   // the origin may emit it (origin_scope)
	StageParams  = "params"  // the params fit the params schema
	StageGrant   = "grant"   // the grant exists and its cap type fits
	StageExpiry  = "expiry"  // the grant has not expired
	StageCap     = "cap"     // the cap's enforcer accepts the params
	StageSecret  = "secret"  // secret refs are allowed for this grant and plan
	StagePolicy  = "policy"  // the policy allows it
	StageAllowed = "allowed" // every check passed
)

// Request is an effect to decide.
type Request struct {
	Kind           string
	Params         schema.Value
	Grant          string // grant name; reducers' slots are resolved by the caller
	IdempotencyKey []byte
	Origin         Origin
	LogicalNowNS   uint64
}

// Decision is the outcome of Gate.Check. Every decision is journaled.
type Decision struct {
	Allowed bool
	// Intent is set when Allowed.
	Intent *Intent
	// Stage is where the decision was made (StageAllowed if allowed).
	Stage string
	// Reason explains a denial in words a user can act on.
	Reason string
	// Enforcer is the module that checked the cap's params, if any.
	Enforcer string
	// Policy and Rule name the policy rule that decided (Rule -1: none
	// matched, or no policy).
	Policy string
	Rule   int
	// Params are the normalized params, when they normalized.
	Params schema.Value
}

// Gate decides effects for one loaded world.
type Gate struct {
	cat *schema.Catalog
}

// NewGate returns the gate of a catalog.
func NewGate(cat *schema.Catalog) *Gate { return &Gate{cat: cat} }

func deny(stage, format string, args ...any) Decision {
	return Decision{Stage: stage, Reason: fmt.Sprintf(format, args...), Rule: -1}
}

// Check decides one effect. It is deterministic: the same request against
// the same catalog gets the same decision.
func (g *Gate) Check(req Request) Decision {
	ef, ok := g.cat.EffectKind(req.Kind)
	if !ok {
		return deny(StageKind, "effect kind %q is not declared by any defeffect of the manifest", req.Kind)
	}
	if ef.OriginScope != "both" && ef.OriginScope != req.Origin.Kind {
		return deny(StageScope, "effect %s may only be emitted by %ss (origin_scope %s), not by %s %s", req.Kind, ef.OriginScope, ef.OriginScope, req.Origin.Kind, req.Origin.Name)
	}
	params, err := schema.Normalize(g.cat, schema.RefType(ef.ParamsSchema), req.Params)
	if err != nil {
		return deny(StageParams, "params of %s do not fit %s: %v", req.Kind, ef.ParamsSchema, err)
	}
	d := g.checkGrant(req, ef, params)
	d.Params = params
	return d
}

func (g *Gate) checkGrant(req Request, ef *schema.DefEffect, params schema.Value) Decision {
	grant, ok := g.cat.Manifest.Grant(req.Grant)
	if !ok {
		return deny(StageGrant, "no cap grant named %q in the manifest's defaults.cap_grants", req.Grant)
	}
	cd, ok := g.cat.Cap(grant.Cap)
	if !ok {
		return deny(StageGrant, "grant %q names cap %s, which is not in the manifest", grant.Name, grant.Cap)
	}
	if cd.CapType != ef.CapType {
		return deny(StageGrant, "grant %q is a %s cap but %s needs %s", grant.Name, cd.CapType, req.Kind, ef.CapType)
	}
	if grant.ExpiryNS != nil && req.LogicalNowNS >= *grant.ExpiryNS {
		return deny(StageExpiry, "grant %q expired at %d (logical time is %d)", grant.Name, *grant.ExpiryNS, req.LogicalNowNS)
	}
	if err := enforce(g.cat, cd, grant.Params, req.Kind, params); err != nil {
		d := deny(StageCap, "cap %s (grant %q) refuses %s: %v", cd.Name, grant.Name, req.Kind, err)
		d.Enforcer = cd.Enforcer
		return d
	}
	if err := g.checkSecrets(req, ef, grant.Name, params); err != nil {
		return deny(StageSecret, "%v", err)
	}
	policy, rule, allowed, why := g.policy(req, grant.Name, cd.CapType)
	if !allowed {
		d := deny(StagePolicy, "%s", why)
		d.Enforcer, d.Policy, d.Rule = cd.Enforcer, policy, rule
		return d
	}
	hash, err := intentHash(req.Kind, params, grant.Name, grant.Cap, req.IdempotencyKey, req.Origin)
	if err != nil {
		return deny(StageParams, "cannot hash the intent: %v", err)
	}
	return Decision{
		Allowed: true, Stage: StageAllowed, Enforcer: cd.Enforcer, Policy: policy, Rule: rule,
		Intent: &Intent{
			Hash: hash, Kind: req.Kind, Params: params, Grant: grant.Name, Cap: grant.Cap, CapType: cd.CapType,
			GrantParams: grant.Params, IdempotencyKey: req.IdempotencyKey, Origin: req.Origin, Effect: ef.Name,
			LogicalNowNS: req.LogicalNowNS,
		},
	}
}

// policy applies the manifest's default policy: the first rule whose every
// condition matches decides; no match, or no policy, denies.
func (g *Gate) policy(req Request, grant, capType string) (name string, rule int, allowed bool, why string) {
	name = g.cat.Manifest.DefaultPolicy
	if name == "" {
		return "", -1, false, fmt.Sprintf("no policy is configured (manifest defaults.policy), so %s from %s %s is denied; add a defpolicy that allows it", req.Kind, req.Origin.Kind, req.Origin.Name)
	}
	p, ok := g.cat.Policy(name)
	if !ok {
		return name, -1, false, fmt.Sprintf("policy %s is not in the manifest", name)
	}
	for i, r := range p.Rules {
		w := r.When
		if (w.EffectKind == "" || w.EffectKind == req.Kind) &&
			(w.CapName == "" || w.CapName == grant) &&
			(w.CapType == "" || w.CapType == capType) &&
			(w.OriginKind == "" || w.OriginKind == req.Origin.Kind) &&
			(w.OriginName == "" || w.OriginName == req.Origin.Name) {
			if r.Decision == "allow" {
				return name, i, true, ""
			}
			return name, i, false, fmt.Sprintf("policy %s rule %d denies %s from %s %s", name, i, req.Kind, req.Origin.Kind, req.Origin.Name)
		}
	}
	return name, -1, false, fmt.Sprintf("no rule of policy %s matches %s from %s %s (no match denies)", name, req.Kind, req.Origin.Kind, req.Origin.Name)
}

// SecretRef is a reference to a defsecret inside params.
type SecretRef struct {
	Alias   string
	Version uint64
}

// Name is the defsecret name the ref points at, "alias@version".
func (s SecretRef) Name() string { return fmt.Sprintf("%s@%d", s.Alias, s.Version) }

// secretTypes are the built-in schemas whose "secret" arm holds a SecretRef.
var secretTypes = map[string]bool{"sys/TextOrSecretRef@1": true, "sys/BytesOrSecretRef@1": true}

// findSecrets walks v along its type and calls fn for every secret ref, in
// value order. fn returns the value to put in the ref's place; findSecrets
// returns the value with the replacements.
func findSecrets(r schema.Resolver, t *schema.Type, v schema.Value, fn func(SecretRef, schema.Value) schema.Value) schema.Value {
	out, _ := walkSecrets(r, t, v, fn, 0)
	return out
}

func walkSecrets(r schema.Resolver, t *schema.Type, v schema.Value, fn func(SecretRef, schema.Value) schema.Value, depth int) (schema.Value, bool) {
	if t == nil || v == nil || depth > 64 {
		return v, false
	}
	if t.Kind == schema.KindRef {
		if secretTypes[t.Ref] {
			m, ok := v.(*schema.Map)
			if !ok {
				return v, false
			}
			tag, val, ok := m.VariantTag()
			if !ok || tag != "secret" {
				return v, false
			}
			sm, _ := val.(*schema.Map)
			a, _ := sm.Get("alias")
			ver, _ := sm.Get("version")
			alias, _ := a.(string)
			n, _ := ver.(uint64)
			return fn(SecretRef{Alias: alias, Version: n}, v), true
		}
		rt, ok := r.SchemaType(t.Ref)
		if !ok {
			return v, false
		}
		return walkSecrets(r, rt, v, fn, depth+1)
	}
	switch t.Kind {
	case schema.KindOption:
		return walkSecrets(r, t.Elem, v, fn, depth+1)
	case schema.KindRecord:
		m, ok := v.(*schema.Map)
		if !ok {
			return v, false
		}
		out, changed := m, false
		for _, f := range t.Fields {
			fv, ok := m.Get(f.Name)
			if !ok {
				continue
			}
			if nv, ch := walkSecrets(r, f.Type, fv, fn, depth+1); ch {
				out, changed = out.With(f.Name, nv), true
			}
		}
		return out, changed
	case schema.KindVariant:
		m, ok := v.(*schema.Map)
		if !ok {
			return v, false
		}
		tag, val, ok := m.VariantTag()
		if !ok {
			return v, false
		}
		at, ok := t.FieldType(tag)
		if !ok {
			return v, false
		}
		if nv, ch := walkSecrets(r, at, val, fn, depth+1); ch {
			return m.With(schema.ValueKey, nv), true
		}
		return v, false
	case schema.KindList, schema.KindSet:
		l, ok := v.([]schema.Value)
		if !ok {
			return v, false
		}
		var out []schema.Value
		for i, e := range l {
			if nv, ch := walkSecrets(r, t.Elem, e, fn, depth+1); ch {
				if out == nil {
					out = append([]schema.Value(nil), l...)
				}
				out[i] = nv
			}
		}
		if out != nil {
			return out, true
		}
		return v, false
	case schema.KindMap:
		m, ok := v.(*schema.Map)
		if !ok {
			return v, false
		}
		out, changed := m, false
		for _, e := range m.Entries() {
			if nv, ch := walkSecrets(r, t.Value, e.Value, fn, depth+1); ch {
				out, changed = out.With(e.Key, nv), true
			}
		}
		return out, changed
	}
	return v, false
}

// checkSecrets applies each referenced defsecret's ACLs.
func (g *Gate) checkSecrets(req Request, ef *schema.DefEffect, grant string, params schema.Value) error {
	var err error
	findSecrets(g.cat, schema.RefType(ef.ParamsSchema), params, func(s SecretRef, v schema.Value) schema.Value {
		if err != nil {
			return v
		}
		d, ok := g.cat.Secret(s.Name())
		if !ok {
			err = fmt.Errorf("secret %s is not declared (add a defsecret named %s and list it in the manifest's secrets)", s.Name(), s.Name())
			return v
		}
		if len(d.AllowedCaps) > 0 && !slices.Contains(d.AllowedCaps, grant) {
			err = fmt.Errorf("secret %s may be used with grants %s, not %q", d.Name, strings.Join(d.AllowedCaps, ", "), grant)
			return v
		}
		if len(d.AllowedPlans) > 0 && (req.Origin.Kind != "plan" || !slices.Contains(d.AllowedPlans, req.Origin.Name)) {
			err = fmt.Errorf("secret %s may be used by plans %s, not by %s %s", d.Name, strings.Join(d.AllowedPlans, ", "), req.Origin.Kind, req.Origin.Name)
		}
		return v
	})
	return err
}
