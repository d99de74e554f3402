package tstamp

import (
	"errors"
	"testing"
)

type fakeSock struct {
	err error
	hw  []bool // the calls' hw
}

func (s *fakeSock) EnableTimestamps(hw bool) error {
	s.hw = append(s.hw, hw)
	return s.err
}

// TestUse: auto falls back to user where a socket has no stamps or
// refuses them, with the reason; kernel and hardware fail there instead.
func TestUse(t *testing.T) {
	refused := errors.New("refused")
	tests := []struct {
		name          string
		asked         Mode
		socks         func() []Enabler
		used          Mode
		fellBack, err error
	}{
		{"user", User, func() []Enabler { return []Enabler{nil} }, User, nil, nil},
		{"auto, stamps", Auto, func() []Enabler { return []Enabler{&fakeSock{}, &fakeSock{}} }, Kernel, nil, nil},
		{"auto, no stamps", Auto, func() []Enabler { return []Enabler{nil} }, User, ErrNoStamps, nil},
		{"auto, refused", Auto, func() []Enabler { return []Enabler{&fakeSock{}, &fakeSock{err: refused}} }, User, refused, nil},
		{"kernel, stamps", Kernel, func() []Enabler { return []Enabler{&fakeSock{}} }, Kernel, nil, nil},
		{"kernel, no stamps", Kernel, func() []Enabler { return []Enabler{nil} }, User, nil, ErrNoStamps},
		{"hardware, stamps", Hardware, func() []Enabler { return []Enabler{&fakeSock{}} }, Hardware, nil, nil},
		{"hardware, refused", Hardware, func() []Enabler { return []Enabler{&fakeSock{err: refused}} }, User, nil, refused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			socks := tt.socks()
			used, fellBack, err := Use(tt.asked, socks...)
			if used != tt.used || fellBack != tt.fellBack || err != tt.err {
				t.Fatalf("Use(%s) = %s, %v, %v; want %s, %v, %v", tt.asked, used, fellBack, err, tt.used, tt.fellBack, tt.err)
			}
			for _, s := range socks {
				if fs, ok := s.(*fakeSock); ok {
					for _, hw := range fs.hw {
						if hw != (tt.asked == Hardware) {
							t.Errorf("Use(%s) asked a socket for hw %v", tt.asked, hw)
						}
					}
				}
			}
		})
	}
}
