//go:build !linux

package sched

import (
	"errors"
	"time"
)

func pin(int) error           { return errors.ErrUnsupported }
func realtime(int) error      { return errors.ErrUnsupported }
func allowed() ([]int, error) { return nil, errors.ErrUnsupported }
func nice(int) error          { return errors.ErrUnsupported }
func mlockall() error         { return errors.ErrUnsupported }

func processCPU() (time.Duration, time.Duration, error) { return 0, 0, errors.ErrUnsupported }
func explain(err error) error                           { return err }
