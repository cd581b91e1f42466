package authz

import (
	"context"
	"log/slog"
)

// All is the decider that allows only what every one of ds allows, asked in order: the
// first that does not allow, or cannot decide, decides (an ingress with allow rules and
// a policy decision point asks both). With no deciders it refuses.
func All(ds ...Decider) Decider {
	return DeciderFunc(func(ctx context.Context, r *Request) (Decision, error) {
		if len(ds) == 0 {
			return Decision{Reason: "no decision point is configured"}, nil
		}
		var last Decision
		for _, d := range ds {
			dec, err := d.Decide(ctx, r)
			if err != nil || !dec.Allow {
				dec.Allow = false
				return dec, err
			}
			last = dec
		}
		return last, nil
	})
}

// Logged is d with every decision logged on log: allowed at debug, refused and
// undecided at info, with the rule that decided and its reason (which the caller is
// never sent), and what the request asked (sender, dialog, method, path, protocol,
// operation, name). A nil log is d itself.
func Logged(d Decider, log *slog.Logger) Decider {
	if log == nil {
		return d
	}
	return DeciderFunc(func(ctx context.Context, r *Request) (Decision, error) {
		dec, err := d.Decide(ctx, r)
		attrs := []slog.Attr{
			slog.String("sender", r.Sender), slog.String("dialog", r.Dialog),
			slog.String("method", r.Method), slog.String("path", r.Path),
			slog.String("protocol", r.Protocol), slog.String("operation", r.Operation), slog.String("name", r.Name),
			slog.Bool("allow", dec.Allow && err == nil), slog.String("rule", dec.Rule), slog.String("reason", dec.Reason),
		}
		level := slog.LevelInfo
		switch {
		case err != nil:
			attrs = append(attrs, slog.String("error", err.Error()))
		case dec.Allow:
			level = slog.LevelDebug
		}
		log.LogAttrs(ctx, level, "authorization decision", attrs...)
		return dec, err
	})
}
