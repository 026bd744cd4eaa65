// Command bash demonstrates the bash tool with a fake e-commerce
// API: four tools (get_user, list_orders, get_inventory, create_discount)
// composed in bash scripts, as a model would write them.
//
//	go run ./examples/bash
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/bash"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bash:", err)
		os.Exit(1)
	}
}

type user struct {
	ID    int64  `json:"id"`
	Name  string `json:"name"`
	Email string `json:"email"`
	Tier  string `json:"tier"`
}

type order struct {
	ID     int64   `json:"id"`
	UserID int64   `json:"user_id"`
	Item   string  `json:"item"`
	Total  float64 `json:"total"`
	Status string  `json:"status"`
}

// shop is the fake backend; its state persists across executions, as a
// real API's would.
type shop struct {
	mu        sync.Mutex
	users     map[int64]user
	orders    []order
	inventory map[string]int
	discounts []string
}

func newShop() *shop {
	return &shop{
		users: map[int64]user{
			1: {1, "Alice", "alice@example.com", "gold"},
			2: {2, "Bob", "bob@example.com", "silver"},
			3: {3, "Carol", "carol@example.com", "gold"},
		},
		orders: []order{
			{101, 1, "laptop", 999.99, "shipped"},
			{102, 1, "mouse", 29.99, "delivered"},
			{103, 2, "keyboard", 79.5, "pending"},
			{104, 3, "monitor", 249, "shipped"},
			{105, 3, "cable", 9.99, "delivered"},
		},
		inventory: map[string]int{"laptop": 4, "mouse": 0, "keyboard": 12, "monitor": 2, "cable": 150},
	}
}

func toJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return string(b) + "\n", nil
}

func (s *shop) tool() (*bash.Tool, error) {
	return bash.NewBuilder("ecommerce_api").
		ShortDescription("E-commerce API: users, orders, inventory, discounts").
		Tool(bash.ToolDef{
			Name:        "get_user",
			Description: "Fetch user by ID",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"integer","description":"user ID"}},"required":["id"]}`),
			Category:    "users",
		}, func(ctx context.Context, args bash.ToolArgs) (string, error) {
			id, _ := args.ParamInt64("id")
			s.mu.Lock()
			u, ok := s.users[id]
			s.mu.Unlock()
			if !ok {
				return "", &bash.UserError{Msg: fmt.Sprintf("user %d not found", id)}
			}
			return toJSON(u)
		}).
		Tool(bash.ToolDef{
			Name:        "list_orders",
			Description: "List orders for a user",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"user_id":{"type":"integer"},"status":{"type":"string","enum":["pending","shipped","delivered"]}},"required":["user_id"]}`),
			Category:    "orders",
		}, func(ctx context.Context, args bash.ToolArgs) (string, error) {
			uid, _ := args.ParamInt64("user_id")
			status, filter := args.ParamString("status")
			s.mu.Lock()
			defer s.mu.Unlock()
			out := []order{}
			for _, o := range s.orders {
				if o.UserID == uid && (!filter || o.Status == status) {
					out = append(out, o)
				}
			}
			return toJSON(out)
		}).
		Tool(bash.ToolDef{
			Name:        "get_inventory",
			Description: "Stock level of an item",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"item":{"type":"string"}},"required":["item"]}`),
			Category:    "inventory",
		}, func(ctx context.Context, args bash.ToolArgs) (string, error) {
			item, _ := args.ParamString("item")
			s.mu.Lock()
			n, ok := s.inventory[item]
			s.mu.Unlock()
			if !ok {
				return "", fmt.Errorf("inventory backend: no SKU for %q", item) // sanitized in the script
			}
			return toJSON(map[string]any{"item": item, "in_stock": n})
		}).
		Tool(bash.ToolDef{
			Name:        "create_discount",
			Description: "Create a discount code for a user",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"user_id":{"type":"integer"},"percent":{"type":"integer","minimum":1,"maximum":50}},"required":["user_id","percent"]}`),
			Category:    "orders",
		}, func(ctx context.Context, args bash.ToolArgs) (string, error) {
			uid, _ := args.ParamInt64("user_id")
			pct, _ := args.ParamInt64("percent")
			s.mu.Lock()
			code := fmt.Sprintf("SAVE%d-U%d-%d", pct, uid, len(s.discounts)+1)
			s.discounts = append(s.discounts, code)
			s.mu.Unlock()
			return toJSON(map[string]any{"code": code, "user_id": uid, "percent": pct})
		}).
		Env("STORE", "demo").
		Build()
}

// demos are the scripts a model might write, one round trip each.
var demos = []struct{ title, script string }{
	{"single call", `get_user --id 1`},
	{"pipe through jq", `get_user --id 2 | jq -r '.name + " <" + .email + ">"'`},
	{"multi-step with variables", `name=$(get_user --id 1 | jq -r .name)
total=$(list_orders --user_id 1 | jq '[.[].total] | add')
echo "$name spent $total"`},
	{"loop and conditional", `for item in laptop mouse keyboard; do
  n=$(get_inventory --item "$item" | jq .in_stock)
  if [ "$n" -gt 0 ]; then echo "$item: $n in stock"; else echo "$item: SOLD OUT"; fi
done`},
	{"per-item error handling", `for id in 1 9 3; do
  if u=$(get_user --id $id); then echo "$u" | jq -r .name; else echo "user $id: lookup failed"; fi
done
get_inventory --item unicorn || echo "fallback: unknown item"`},
	{"aggregation and action", `for id in 1 2 3; do
  tier=$(get_user --id $id | jq -r .tier)
  spent=$(list_orders --user_id $id | jq '[.[].total] | add // 0')
  printf '%s %s %.2f\n' "$id" "$tier" "$spent"
done | sort -k3 -rn | head -2 | while read id tier spent; do
  create_discount --user_id "$id" --percent 10 | jq -r '"\(.code) for user \(.user_id) (spent '"$spent"')"'
done`},
}

func run(ctx context.Context, w io.Writer) error {
	s := newShop()
	tool, err := s.tool()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "=== system prompt ===\n%s\n", tool.Info().SystemPrompt)
	for _, d := range demos {
		fmt.Fprintf(w, "\n=== %s ===\n$ %s\n", d.title, strings.ReplaceAll(d.script, "\n", "\n  "))
		res := tool.RunScript(ctx, tools.Request{Commands: d.script}, bash.RunOptions{})
		fmt.Fprint(w, res.Stdout)
		if res.Stderr != "" {
			fmt.Fprintf(w, "[stderr] %s", res.Stderr)
		}
		fmt.Fprintf(w, "[exit %d, %d tool calls]\n", res.ExitCode, len(res.Calls))
	}
	return nil
}
