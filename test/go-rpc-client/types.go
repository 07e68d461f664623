// The Go types rancher-machine sends to and receives from a driver plugin, redefined
// here (stdlib only) and registered with gob under the exact names rancher/machine's
// packages produce, so that the bytes on the wire are the ones a real parent sends.
package main

import "encoding/gob"

// Flag stands for mcnflag.Flag.
type Flag interface {
	String() string
	Default() interface{}
}

type StringFlag struct {
	Name   string
	Usage  string
	EnvVar string
	Value  string
}

type IntFlag struct {
	Name   string
	Usage  string
	EnvVar string
	Value  int
}

type BoolFlag struct {
	Name   string
	Usage  string
	EnvVar string
}

type StringSliceFlag struct {
	Name   string
	Usage  string
	EnvVar string
	Value  []string
}

func (f StringFlag) String() string            { return f.Name }
func (f StringFlag) Default() interface{}      { return f.Value }
func (f IntFlag) String() string               { return f.Name }
func (f IntFlag) Default() interface{}         { return f.Value }
func (f BoolFlag) String() string              { return f.Name }
func (f BoolFlag) Default() interface{}        { return false }
func (f StringSliceFlag) String() string       { return f.Name }
func (f StringSliceFlag) Default() interface{} { return f.Value }

// DriverOptions stands for drivers.DriverOptions.
type DriverOptions interface {
	String(key string) string
	StringSlice(key string) []string
	Int(key string) int
	Bool(key string) bool
}

// RPCFlags stands for rpcdriver.RPCFlags.
type RPCFlags struct {
	Values map[string]interface{}
}

func (r RPCFlags) String(key string) string        { s, _ := r.Values[key].(string); return s }
func (r RPCFlags) StringSlice(key string) []string { s, _ := r.Values[key].([]string); return s }
func (r RPCFlags) Int(key string) int              { i, _ := r.Values[key].(int); return i }
func (r RPCFlags) Bool(key string) bool            { b, _ := r.Values[key].(bool); return b }

// State stands for state.State.
type State int

func init() {
	// In rancher/machine these are gob.Register(new(X)) calls in package rpcdriver and
	// mcnflag; Register names a pointer type by its String(), e.g. "*mcnflag.StringFlag".
	// Our package is main, so the names are given explicitly.
	gob.RegisterName("*rpcdriver.RPCFlags", new(RPCFlags))
	gob.RegisterName("*mcnflag.IntFlag", new(IntFlag))
	gob.RegisterName("*mcnflag.StringFlag", new(StringFlag))
	gob.RegisterName("*mcnflag.StringSliceFlag", new(StringSliceFlag))
	gob.RegisterName("*mcnflag.BoolFlag", new(BoolFlag))
}
