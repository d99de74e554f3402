package client

import "github.com/volley-net/volley/internal/result"

// funcs is a Handler made of the functions a test sets (nil: not heard).
type funcs struct {
	start     func(*result.Result)
	interval  func(result.Interval)
	reconnect func(result.Reconnect)
	end       func(*result.Result)
}

func (f funcs) Start(res *result.Result) {
	if f.start != nil {
		f.start(res)
	}
}

func (f funcs) Interval(iv result.Interval) {
	if f.interval != nil {
		f.interval(iv)
	}
}

func (f funcs) Reconnect(rc result.Reconnect) {
	if f.reconnect != nil {
		f.reconnect(rc)
	}
}

func (f funcs) End(res *result.Result) {
	if f.end != nil {
		f.end(res)
	}
}
